# argtypes: alpha::Float64, beta::Float64, A::Matrix{Float64}, B::Matrix{Float64}, x::Vector{Float64}, y::Vector{Float64}
function kernel_gesummv(alpha, beta, A, B, x, y)
    n = size(A, 1)
    for i in 1:n
        t = 0.0
        u = 0.0
        for j in 1:n
            t = t + A[i, j] * x[j]
            u = u + B[i, j] * x[j]
        end
        y[i] = alpha * t + beta * u
    end
    return nothing
end
