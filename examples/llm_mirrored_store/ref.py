import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return 2.0 * x


def get_inputs():
    return [torch.rand(64, 64)]


def get_init_inputs():
    return []
