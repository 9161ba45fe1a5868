//! `SplitMix64` (Steele, Lea and Flood, 2014): a few lines, and the same numbers for a seed on every
//! platform and every version of this tool, which a general-purpose RNG crate does not promise. The
//! bootstrap intervals of `compare` draw from it, and so do the generators of test data and
//! benchmarks.

/// The generator, seeded by its one word of state.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`, `n` positive (Lemire's multiply-shift; the bias is below 2⁻³² for any
    /// `n` below 2³²).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_of_a_seed_is_splitmix64s() {
        // The first outputs for seed 0 in the reference implementation (Vigna's splitmix64.c).
        let mut rng = SplitMix64(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut rng = SplitMix64(7);
        assert!((0..1000).all(|_| rng.below(10) < 10));
    }
}
