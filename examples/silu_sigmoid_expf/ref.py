import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
