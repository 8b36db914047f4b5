# argtypes: A::Matrix{Float64}, B::Matrix{Float64}, threshold::Float64
function kernel_ifelse(A, B, threshold)
    m = size(A, 1)
    n = size(A, 2)
    for j in 1:n
        for i in 1:m
            if i == j
                continue
            end
            if A[i, j] > threshold && i < j
                B[i, j] = A[i, j] - threshold
            else
                B[i, j] = abs(A[i, j]) * 0.5
            end
        end
    end
    return nothing
end
