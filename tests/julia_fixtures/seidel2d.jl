# argtypes: tsteps::Int64, A::Matrix{Float64}
function kernel_seidel_2d(tsteps, A)
    n = size(A, 1)
    for t in 1:tsteps
        for i in 2:n-1
            for j in 2:n-1
                A[i, j] = (A[i-1, j-1] + A[i-1, j] + A[i-1, j+1] + A[i, j-1] + A[i, j] + A[i, j+1] + A[i+1, j-1] + A[i+1, j] + A[i+1, j+1]) / 9.0
            end
        end
    end
    return nothing
end
