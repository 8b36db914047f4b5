# argtypes: L::Matrix{Float64}, x::Vector{Float64}, y::Vector{Float64}
function kernel_trmv(L, x, y)
    n = size(L, 1)
    for i in 1:n
        y[i] = 0.0
        for j in 1:i
            y[i] = y[i] + L[i, j] * x[j]
        end
    end
    return nothing
end
