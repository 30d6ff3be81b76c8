"""AvgPool2d (kernel 3, stride 3) on 4 x 8 x 96 x 96."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=3)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.rand(4, 8, 96, 96)]


def get_init_inputs():
    return []
