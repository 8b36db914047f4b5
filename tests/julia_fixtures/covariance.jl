# argtypes: data::Matrix{Float64}, cov::Matrix{Float64}, mean::Vector{Float64}
function kernel_covariance(data, cov, mean)
    n = size(data, 1)
    m = size(data, 2)
    float_n = float(n)
    for j in 1:m
        mean[j] = 0.0
        for i in 1:n
            mean[j] = mean[j] + data[i, j]
        end
        mean[j] = mean[j] / float_n
    end
    for i in 1:n
        for j in 1:m
            data[i, j] = data[i, j] - mean[j]
        end
    end
    for i in 1:m
        for j in i:m
            cov[i, j] = 0.0
            for k in 1:n
                cov[i, j] = cov[i, j] + data[k, i] * data[k, j]
            end
            cov[i, j] = cov[i, j] / (float_n - 1.0)
            cov[j, i] = cov[i, j]
        end
    end
    return nothing
end
