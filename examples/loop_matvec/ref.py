import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, A, v):
        return torch.matmul(A, v)


M = 4096
K = 4096


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
