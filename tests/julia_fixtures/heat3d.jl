# argtypes: tsteps::Int64, A::Array{Float32, 3}, B::Array{Float32, 3}
function kernel_heat3d(tsteps, A, B)
    nx = size(A, 1)
    ny = size(A, 2)
    nz = size(A, 3)
    for t in 1:tsteps
        for k in 2:nz-1
            for j in 2:ny-1
                for i in 2:nx-1
                    B[i, j, k] = A[i, j, k] + 0.125f0 * (A[i, j, k-1] - 2.0f0 * A[i, j, k] + A[i, j, k+1] + A[i, j-1, k] - 2.0f0 * A[i, j, k] + A[i, j+1, k] + A[i-1, j, k] - 2.0f0 * A[i, j, k] + A[i+1, j, k])
                end
            end
        end
        for k in 2:nz-1
            for j in 2:ny-1
                for i in 2:nx-1
                    A[i, j, k] = B[i, j, k] + 0.125f0 * (B[i, j, k-1] - 2.0f0 * B[i, j, k] + B[i, j, k+1] + B[i, j-1, k] - 2.0f0 * B[i, j, k] + B[i, j+1, k] + B[i-1, j, k] - 2.0f0 * B[i, j, k] + B[i+1, j, k])
                end
            end
        end
    end
    return nothing
end
