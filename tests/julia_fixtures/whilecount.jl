# argtypes: x::Vector{Float64}, y::Vector{Float64}
function kernel_while(x, y)
    n = length(x)
    i = 1
    while i <= n
        y[i] = 2.0 * x[i] + 1.0
        i = i + 2
    end
    return nothing
end
