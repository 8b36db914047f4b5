# argtypes: x::Vector{Float64}, y::Vector{Float64}, limit::Float64
# returns: Int64
function kernel_break(x, y, limit)
    n = length(x)
    count = 0
    for i in 1:n
        if x[i] > limit
            break
        end
        y[i] = sqrt(x[i]^2 + 1.0)
        count = count + 1
    end
    return count
end
