//! The first `n` items of a stream in sorted order, in memory for `n` of
//! them: what find and ls keep of a directory with millions of names when
//! they show a few hundred.

use std::collections::BinaryHeap;

/// Keeps the `limit` smallest items offered, and counts them all.
#[derive(Debug)]
pub(crate) struct Smallest<T: Ord> {
    limit: usize,
    offered: usize,
    /// A max-heap: its top is the first to go when a smaller item comes.
    kept: BinaryHeap<T>,
}

impl<T: Ord> Smallest<T> {
    /// Keeps at most `limit` items.
    pub(crate) fn new(limit: usize) -> Self {
        Smallest {
            limit,
            offered: 0,
            // Bounded by what a caller may ask for, not reserved up front.
            kept: BinaryHeap::new(),
        }
    }

    /// Counts `item`, and keeps it while it is among the `limit` smallest.
    pub(crate) fn offer(&mut self, item: T) {
        self.offered += 1;
        if self.kept.len() < self.limit {
            self.kept.push(item);
        } else if let Some(mut largest) = self.kept.peek_mut()
            && item < *largest
        {
            *largest = item;
        }
    }

    /// How many items were offered in all.
    pub(crate) fn offered(&self) -> usize {
        self.offered
    }

    /// The kept items, smallest first.
    pub(crate) fn into_sorted(self) -> Vec<T> {
        self.kept.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_smallest_in_order_and_counts_all() {
        let mut first = Smallest::new(3);
        for n in [9, 2, 7, 1, 8, 3, 3, 0] {
            first.offer(n);
        }
        assert_eq!(first.offered(), 8);
        assert_eq!(first.into_sorted(), vec![0, 1, 2]);
        let mut none = Smallest::new(0);
        none.offer(1);
        assert_eq!(none.offered(), 1);
        assert!(none.into_sorted().is_empty());
    }
}
