# argtypes: tmp::Matrix{Float64}, A::Matrix{Float64}, B::Matrix{Float64}, C::Matrix{Float64}, D::Matrix{Float64}, alpha::Float64, beta::Float64
function kernel_2mm(tmp, A, B, C, D, alpha, beta)
    ni = size(A, 1)
    nk = size(A, 2)
    nj = size(B, 2)
    nl = size(C, 2)
    for i in 1:ni
        for j in 1:nj
            tmp[i, j] = 0.0
            for k in 1:nk
                tmp[i, j] = tmp[i, j] + alpha * A[i, k] * B[k, j]
            end
        end
    end
    for i in 1:ni
        for j in 1:nl
            D[i, j] = D[i, j] * beta
            for k in 1:nj
                D[i, j] = D[i, j] + tmp[i, k] * C[k, j]
            end
        end
    end
    return nothing
end
