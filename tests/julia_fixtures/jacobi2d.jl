# argtypes: tsteps::Int64, A::Matrix{Float64}, B::Matrix{Float64}
function kernel_jacobi_2d(tsteps, A, B)
    n = size(A, 1)
    for t in 1:tsteps
        for j in 2:n-1
            for i in 2:n-1
                B[i, j] = 0.2 * (A[i, j] + A[i, j-1] + A[i, j+1] + A[i+1, j] + A[i-1, j])
            end
        end
        for j in 2:n-1
            for i in 2:n-1
                A[i, j] = 0.2 * (B[i, j] + B[i, j-1] + B[i, j+1] + B[i+1, j] + B[i-1, j])
            end
        end
    end
    return nothing
end
