# argtypes: A::Array{Float64, 3}, C4::Matrix{Float64}, acc::Vector{Float64}
function kernel_doitgen(A, C4, acc)
    nr = size(A, 1)
    nq = size(A, 2)
    np = size(A, 3)
    for r in 1:nr
        for q in 1:nq
            for p in 1:np
                acc[p] = 0.0
                for s in 1:np
                    acc[p] = acc[p] + A[r, q, s] * C4[s, p]
                end
            end
            for p in 1:np
                A[r, q, p] = acc[p]
            end
        end
    end
    return nothing
end
