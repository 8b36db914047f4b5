# argtypes: A::Matrix{Float64}, s::Vector{Float64}, q::Vector{Float64}, p::Vector{Float64}, r::Vector{Float64}
function kernel_bicg(A, s, q, p, r)
    n = size(A, 1)
    m = size(A, 2)
    for j in 1:m
        s[j] = 0.0
    end
    for i in 1:n
        q[i] = 0.0
        for j in 1:m
            s[j] = s[j] + r[i] * A[i, j]
            q[i] = q[i] + A[i, j] * p[j]
        end
    end
    return nothing
end
