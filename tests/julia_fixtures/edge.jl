# argtypes: img::Array{Float32, 3}, R::Array{Float32, 3}
function kernel_edge(img, R)
    nx = size(img, 1)
    ny = size(img, 2)
    nc = size(img, 3)
    for c in 1:nc
        for j in 1:ny-2
            for i in 1:nx-2
                R[i, j, c] = (img[i, j, c] + img[i+1, j, c] + img[i+2, j, c] + img[i, j+1, c] + img[i+2, j+1, c] + img[i, j+2, c] + img[i+1, j+2, c] + img[i+2, j+2, c]) / 8.0f0
            end
        end
    end
    for c in 1:nc
        for j in 1:ny-3
            for i in 1:nx-3
                img[i, j, c] = (R[i, j, c] - R[i+1, j+1, c]) + (R[i+1, j, c] - R[i, j+1, c])
            end
        end
    end
    return nothing
end
