# argtypes: A::Matrix{Float64}, x::Vector{Float64}, y::Vector{Float64}
function kernel_atax(A, x, y)
    m = size(A, 1)
    n = size(A, 2)
    @inbounds for j in 1:n
        y[j] = 0.0
    end
    @inbounds for i in 1:m
        t = 0.0
        for j in 1:n
            t = t + A[i, j] * x[j]
        end
        for j in 1:n
            y[j] = y[j] + A[i, j] * t
        end
    end
    return nothing
end
