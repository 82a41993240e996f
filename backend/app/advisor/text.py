"""Numbers as the advisor writes them in a sentence."""


def pct(share: float) -> str:
    """A share (0..1) as a percentage: 0.4312 -> "43%", 0.004 -> "0.4%"."""
    value = share * 100
    return f"{value:.1f}%" if 0 < abs(value) < 10 else f"{value:.0f}%"


def secs(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def mib(size: float) -> str:
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GiB"
    if size >= 1 << 20:
        return f"{size / (1 << 20):.0f} MiB"
    return f"{size / 1024:.0f} KiB"


def size_option(size: int) -> str:
    """A size as a server option takes it: whole GiB as "2G", else whole MiB as "512M"."""
    if size % (1 << 30) == 0:
        return f"{size >> 30}G"
    return f"{max(size >> 20, 1)}M"
