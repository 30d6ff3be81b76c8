"""max_pool1d, kernel 8, stride 4, no padding, on 16 x 64 x 8196 (2048 windows a row)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.max_pool1d(x, 8, 4)


def get_inputs():
    return [torch.rand(16, 64, 8196)]


def get_init_inputs():
    return []
