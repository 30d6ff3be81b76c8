"""MaxPool2d (kernel 4, stride 1, padding 1) on 2 x 3 x 32 x 32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=4, stride=1, padding=1)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.rand(2, 3, 32, 32)]


def get_init_inputs():
    return []
