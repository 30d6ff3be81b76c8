import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.view(8, 1024, 12, 64).permute(0, 2, 1, 3).contiguous()


def get_inputs():
    return [torch.randn(8, 1024, 768)]


def get_init_inputs():
    return []
