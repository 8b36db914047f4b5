# argtypes: A::Matrix{Float64}, B::Array{Float64, 3}, C::Matrix{Float64}, D::Matrix{Float64}
function kernel_mttkrp(A, B, C, D)
    ni = size(B, 1)
    nk = size(B, 2)
    nl = size(B, 3)
    nj = size(C, 2)
    for i in 1:ni
        for j in 1:nj
            A[i, j] = 0.0
            for k in 1:nk
                for l in 1:nl
                    A[i, j] = A[i, j] + B[i, k, l] * C[k, j] * D[l, j]
                end
            end
        end
    end
    return nothing
end
