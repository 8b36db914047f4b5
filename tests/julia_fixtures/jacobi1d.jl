# argtypes: tsteps::Int64, A::Vector{Float64}, B::Vector{Float64}
function kernel_jacobi_1d(tsteps, A, B)
    n = size(A, 1)
    for t in 1:tsteps
        for i in 2:n-1
            B[i] = 0.33333 * (A[i-1] + A[i] + A[i+1])
        end
        for i in 2:n-1
            A[i] = 0.33333 * (B[i-1] + B[i] + B[i+1])
        end
    end
    return nothing
end
