# argtypes: out::Matrix{Float32}, inp::Matrix{Float32}
function kernel_heat2d(out, inp)
    nx = size(inp, 1)
    ny = size(inp, 2)
    for j in 1:ny
        for i in 1:nx
            out[i, j] = inp[i, j]
        end
    end
    for j in 2:ny-1
        for i in 2:nx-1
            out[i, j] = 0.3f0 * inp[i, j] + 0.4f0 * (inp[i+1, j] + inp[i-1, j] + inp[i, j+1] + inp[i, j-1])
        end
    end
    return nothing
end
