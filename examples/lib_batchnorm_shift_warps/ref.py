"""BatchNorm2d over 32 channels of a 16 x 32 x 64 x 64 tensor, in training mode (the batch statistics)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.rand(16, 32, 64, 64)]


def get_init_inputs():
    return [32]
