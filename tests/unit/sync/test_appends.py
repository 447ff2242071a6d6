"""The append's arithmetic: CRC32C of a concatenation from its halves' CRC32Cs, and the byte
ranges an unchanged prefix is copied in within S3's part rules."""

from __future__ import annotations

from itertools import pairwise

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onprem_agent.sync.appends import MAX_COPY_PART, MIN_PART, crc32c_combine, prefix_ranges

MIB = 1024 * 1024


@given(a=st.binary(max_size=300), b=st.binary(max_size=300))
def test_the_combined_crc32c_is_the_crc32c_of_the_concatenation(a, b):
    assert crc32c_combine(crc32c.crc32c(a), crc32c.crc32c(b), len(b)) == crc32c.crc32c(a + b)


def test_a_changed_prefix_gives_another_combined_crc32c():
    prefix, new = b"x" * 100_000, b"appended"
    changed = prefix[:50_000] + b"y" + prefix[50_001:]
    assert crc32c_combine(crc32c.crc32c(changed), crc32c.crc32c(new), len(new)) != (
        crc32c.crc32c(prefix + new))


@pytest.mark.parametrize(("prefix", "part", "sizes"), [
    (5 * MIB + 256 * 1024, 512 * MIB, [5 * MIB + 256 * 1024]),
    (64 * MIB, 512 * MIB, [64 * MIB]),
    (20 * MIB, 8 * MIB, [8 * MIB, 12 * MIB]),  # a 4 MiB remainder joins the part before
    (24 * MIB, 8 * MIB, [8 * MIB, 8 * MIB, 8 * MIB]),
    (12 * MIB, 1 * MIB, [5 * MIB, 7 * MIB]),  # never below S3's 5 MiB
])
def test_prefix_ranges_cover_the_prefix_in_parts_s3_accepts(prefix, part, sizes):
    ranges = prefix_ranges(prefix, part)
    assert [end - start + 1 for start, end in ranges] == sizes
    assert ranges[0][0] == 0 and ranges[-1][1] == prefix - 1
    assert all(b[0] == a[1] + 1 for a, b in pairwise(ranges))


def test_prefix_ranges_stay_within_the_copy_part_limit():
    ranges = prefix_ranges(MAX_COPY_PART * 2 + 1, MAX_COPY_PART)
    assert all(MIN_PART <= end - start + 1 <= MAX_COPY_PART for start, end in ranges)


def test_a_prefix_under_the_part_minimum_is_refused():
    with pytest.raises(ValueError, match="at least 5242880 bytes"):
        prefix_ranges(MIN_PART - 1, 8 * MIB)
