# argtypes: C::Matrix{Float64}, A::Matrix{Float64}, B::Matrix{Float64}, alpha::Float64, beta::Float64
function kernel_gemm(C, A, B, alpha, beta)
    ni = size(C, 1)
    nj = size(C, 2)
    nk = size(A, 2)
    for i in 1:ni
        for j in 1:nj
            C[i, j] = C[i, j] * beta
        end
        for k in 1:nk
            for j in 1:nj
                C[i, j] = C[i, j] + alpha * A[i, k] * B[k, j]
            end
        end
    end
    return nothing
end
