"""Serving with a paged KV cache: which physical pages each sequence owns,
and the metadata arrays of each step (docs/Contract.md 1 and 3.3), for a
loop of continuous batching that runs the compiled kernel ops.

    state = serving.BatchState(num_pages=64, page_size=16)
    state.add("a"); state.add("b")
    step = state.schedule({"a": 7, "b": 3})    # a prefill of ragged prompts
    module.decode_step(*step.collection(blocks), layer, q, k, v,
                       step.row_offsets, out)  # rows in step.sequences' order
    state.fork("a", "c")                       # c shares a's cached prefix
    state.finish("b")                          # b's pages are free again
    step = state.schedule({"a": 1, "c": 4})    # c writes into a shared page:
    if len(step.copy_pairs):                   # copy it first (copy-on-write)
        module.copy_pages(*step.collection(blocks), step.copy_pairs)

Pages are reference counted (`PageAllocator`): a forked sequence shares its
parent's pages; a step that writes into a page another sequence still
holds gives the writer a fresh copy, listed in `Step.copy_pairs` for
kvcache.copy_pages, which must run before the step's stores. Full pages of
a shared prefix stay shared: nobody writes them again. Page `null_page`
(0 by default) is never allocated: it pads the lookup table's rows, whose
columns past a sequence's pages must hold some valid page (MAX's null
page). Plain Python + numpy: the arrays are numpy, the blocks the caller's
(any array the compiled modules take: a torch tensor, numpy).
"""

import numpy as np

__all__ = ["BatchState", "OutOfPages", "PageAllocator", "Step"]


class OutOfPages(RuntimeError):
    """A step needs more free pages than the cache has: finish (or
    preempt) a sequence and schedule again; the state is unchanged."""


class PageAllocator:
    """The physical pages `[0, num_pages)` of a paged cache's blocks, each
    free or held by one or more sequences (a reference count). Pages in
    `reserved` are never handed out. `allocate` hands out the page freed
    last, else the lowest free one: a fixed order, so runs reproduce."""

    def __init__(self, num_pages, reserved=(0,)):
        if num_pages <= len(set(reserved)):
            raise ValueError(f"{num_pages} pages leave none to allocate "
                             f"besides the reserved {sorted(set(reserved))}")
        self.num_pages = num_pages
        self._refs = [0] * num_pages
        self._free = [p for p in range(num_pages - 1, -1, -1)
                      if p not in reserved]

    @property
    def num_free(self):
        """Pages no sequence holds."""
        return len(self._free)

    def refs(self, page):
        """How many sequences hold `page`."""
        return self._refs[page]

    def allocate(self):
        """A free page, now held once; OutOfPages when none is free."""
        if not self._free:
            raise OutOfPages(f"all {self.num_pages} pages are in use")
        page = self._free.pop()
        self._refs[page] = 1
        return page

    def share(self, page):
        """One more holder of the held `page` (a forked sequence)."""
        if self._refs[page] == 0:
            raise ValueError(f"page {page} is free: only a held page is shared")
        self._refs[page] += 1

    def release(self, page):
        """One holder fewer; the page is free again after its last one."""
        if self._refs[page] == 0:
            raise ValueError(f"page {page} is already free")
        self._refs[page] -= 1
        if self._refs[page] == 0:
            self._free.append(page)


def _pages_for(tokens, page_size):
    return -(-tokens // page_size)


class Step:
    """The arrays of one step, for the sequences `sequences` in this order
    (the batch's order: sequence b's rows are rows row_offsets[b] to
    row_offsets[b+1] of q, the new K/V rows and out):

    cache_lengths     int32 [batch]: tokens cached before the step
    lookup_table      int32 [batch, max_pages]: each sequence's pages, the
                      rest of its row the null page
    row_offsets       int32 [batch + 1]: the step's new rows
    context_offsets   int32 [batch + 1]: cache_lengths + new rows, ragged
                      (gather_ragged's ctx_offsets of the whole context)
    max_seq_length    the most new rows of a sequence (0: none)
    max_cache_length  the most tokens of a sequence after the step
    copy_pairs        int32 [n, 2]: (src, dst) pages that kvcache.copy_pages
                      must copy before the step's stores (copy-on-write)
    """

    def __init__(self, sequences, cache_lengths, new_lengths, pages,
                 max_pages, null_page, copy_pairs):
        self.sequences = tuple(sequences)
        batch = len(self.sequences)
        self.cache_lengths = np.array(cache_lengths, np.int32).reshape(batch)
        totals = self.cache_lengths + np.array(new_lengths, np.int32)
        self.row_offsets = np.zeros(batch + 1, np.int32)
        np.cumsum(new_lengths, out=self.row_offsets[1:])
        self.context_offsets = np.zeros(batch + 1, np.int32)
        np.cumsum(totals, out=self.context_offsets[1:])
        self.lookup_table = np.full((batch, max_pages), null_page, np.int32)
        for b, owned in enumerate(pages):
            self.lookup_table[b, :len(owned)] = owned
        self.max_seq_length = int(max(new_lengths, default=0))
        self.max_cache_length = int(totals.max(initial=0))
        self.copy_pairs = np.array(copy_pairs, np.int32).reshape(-1, 2)

    @property
    def num_rows(self):
        """The step's new rows (all sequences)."""
        return int(self.row_offsets[-1])

    def rows(self, sequence):
        """The slice of the step's rows that belong to `sequence`."""
        b = self.sequences.index(sequence)
        return slice(int(self.row_offsets[b]), int(self.row_offsets[b + 1]))

    def collection(self, blocks):
        """The five values of the step's paged collection over `blocks`:
        (blocks, cache_lengths, lookup_table, max_seq_length,
        max_cache_length), the first arguments of every builders function."""
        return (blocks, self.cache_lengths, self.lookup_table,
                self.max_seq_length, self.max_cache_length)


class _Sequence:
    def __init__(self, pages=(), length=0):
        self.pages = list(pages)
        self.length = length


class BatchState:
    """The sequences being served and their pages in a cache of `num_pages`
    pages of `page_size` tokens. `max_pages` fixes the lookup table's
    columns (a sequence's capacity: max_pages x page_size tokens; None:
    as many as the step's longest sequence needs, at least one);
    `null_page` pads the table and is never allocated."""

    def __init__(self, num_pages, page_size, max_pages=None, null_page=0):
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        self.page_size = page_size
        self.max_pages = max_pages
        self.null_page = null_page
        self.allocator = PageAllocator(num_pages, reserved=(null_page,))
        self._sequences = {}

    def __contains__(self, sequence):
        return sequence in self._sequences

    def __len__(self):
        return len(self._sequences)

    def length(self, sequence):
        """Tokens cached for `sequence` (after the steps scheduled)."""
        return self._get(sequence).length

    def pages(self, sequence):
        """The physical pages of `sequence`, logical page order."""
        return list(self._get(sequence).pages)

    def add(self, sequence):
        """A new, empty sequence (any hashable id)."""
        if sequence in self._sequences:
            raise KeyError(f"sequence {sequence!r} is already being served")
        self._sequences[sequence] = _Sequence()

    def fork(self, parent, child):
        """A new sequence `child` with `parent`'s cached tokens, sharing its
        pages (no copy now: the first write into a shared page copies
        it)."""
        source = self._get(parent)
        if child in self._sequences:
            raise KeyError(f"sequence {child!r} is already being served")
        for page in source.pages:
            self.allocator.share(page)
        self._sequences[child] = _Sequence(source.pages, source.length)

    def finish(self, sequence):
        """Stops serving `sequence`: its pages are released (freed unless a
        fork still holds them)."""
        for page in self._get(sequence).pages:
            self.allocator.release(page)
        del self._sequences[sequence]

    def schedule(self, new_tokens):
        """The Step that appends new_tokens[s] tokens to each sequence `s`
        (a dict; its order is the batch's): allocates the pages the tokens
        need and gives a writer of a shared page its own copy. The lengths
        then count the new tokens. OutOfPages (the state unchanged) when
        the free pages do not suffice; ValueError past `max_pages`."""
        batch = [(s, self._get(s), int(n)) for s, n in new_tokens.items()]
        self._reserve(batch)
        pairs, cache_lengths, pages = [], [], []
        for _, sequence, count in batch:
            cache_lengths.append(sequence.length)
            if count and self._shared_tail(sequence):
                page = sequence.pages[-1]
                copy = self.allocator.allocate()
                self.allocator.release(page)
                sequence.pages[-1] = copy
                pairs.append((page, copy))
            total = sequence.length + count
            while len(sequence.pages) < _pages_for(total, self.page_size):
                sequence.pages.append(self.allocator.allocate())
            sequence.length = total
            pages.append(list(sequence.pages))
        columns = self.max_pages or max([len(p) for p in pages] + [1])
        return Step([s for s, _, _ in batch], cache_lengths,
                    [n for _, _, n in batch], pages, columns, self.null_page,
                    pairs)

    def _get(self, sequence):
        try:
            return self._sequences[sequence]
        except KeyError:
            raise KeyError(f"no sequence {sequence!r} is being served") from None

    def _shared_tail(self, sequence, released=None):
        """Whether the next token of `sequence` goes into a page that
        others hold too (its last page, partly filled); `released` counts
        the holders a step has already copied away from."""
        if not sequence.length % self.page_size:
            return False
        page = sequence.pages[-1]
        return self.allocator.refs(page) - (released or {}).get(page, 0) > 1

    def _reserve(self, batch):
        """ValueError past the capacity, OutOfPages unless the free pages
        cover what `batch` ((id, sequence, count) triples) allocates: new
        pages and copies, as `schedule` makes them (the last writer of a
        shared page keeps it)."""
        needed, released = 0, {}
        for name, sequence, count in batch:
            total = sequence.length + count
            if count < 0:
                raise ValueError(f"sequence {name!r}: {count} new tokens")
            if self.max_pages and _pages_for(total, self.page_size) > self.max_pages:
                raise ValueError(
                    f"sequence {name!r} would hold {total} tokens, more than "
                    f"{self.max_pages} pages of {self.page_size} hold")
            if count and self._shared_tail(sequence, released):
                page = sequence.pages[-1]
                released[page] = released.get(page, 0) + 1
                needed += 1
            needed += _pages_for(total, self.page_size) - len(sequence.pages)
        if needed > self.allocator.num_free:
            raise OutOfPages(f"the step needs {needed} pages, "
                             f"{self.allocator.num_free} are free")
