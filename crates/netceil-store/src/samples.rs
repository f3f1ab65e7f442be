//! The encoding of one series row: every value of one interval in one BLOB.
//!
//! Layout, all little-endian:
//!
//! ```text
//! u32 n                      values in this row (the run's metric count when it was written)
//! ceil(n / 8) bytes          presence bitmap, bit i of byte i/8 set when value i was measured
//! 8 bytes × present          the f64 bits of each measured value, in metric order
//! ```
//!
//! A missing value costs one bit and is never confused with 0. The exact f64 bits are kept,
//! NaN and -0.0 included. A metric that first appears after a row was written has index ≥ n
//! in that row and so reads back as missing, which is what [`netceil_model::Series`] says too.

/// Encodes one row of values in metric order.
pub(crate) fn encode_row(values: &[Option<f64>]) -> Vec<u8> {
    let n = values.len();
    let present = values.iter().filter(|v| v.is_some()).count();
    let mut blob = Vec::with_capacity(4 + n.div_ceil(8) + 8 * present);
    // A run has far fewer than 2^32 metrics; the writer checks before calling.
    blob.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
    let mut bitmap = vec![0u8; n.div_ceil(8)];
    for (i, v) in values.iter().enumerate() {
        if v.is_some() {
            bitmap[i / 8] |= 1 << (i % 8);
        }
    }
    blob.extend_from_slice(&bitmap);
    for v in values.iter().flatten() {
        blob.extend_from_slice(&v.to_le_bytes());
    }
    blob
}

/// Decodes a row written by [`encode_row`]; the error says what is wrong with the bytes.
pub(crate) fn decode_row(blob: &[u8]) -> Result<Vec<Option<f64>>, String> {
    let (count, rest) = blob
        .split_first_chunk::<4>()
        .ok_or_else(|| format!("{} bytes, expected at least 4", blob.len()))?;
    let n = u32::from_le_bytes(*count) as usize;
    let bitmap_len = n.div_ceil(8);
    let (bitmap, mut payload) = rest.split_at_checked(bitmap_len).ok_or_else(|| {
        format!(
            "{n} values need a {bitmap_len}-byte bitmap, only {} bytes follow",
            rest.len()
        )
    })?;
    let present: usize = bitmap.iter().map(|b| b.count_ones() as usize).sum();
    if payload.len() != 8 * present {
        return Err(format!(
            "{present} present values need {} bytes, found {}",
            8 * present,
            payload.len()
        ));
    }
    if (n..bitmap_len * 8).any(|i| bitmap[i / 8] & (1 << (i % 8)) != 0) {
        return Err(format!("presence bits set beyond the {n} values"));
    }
    let mut values = Vec::with_capacity(n);
    for i in 0..n {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            let (bytes, rest) = payload
                .split_first_chunk::<8>()
                .ok_or("payload shorter than the bitmap says")?;
            values.push(Some(f64::from_le_bytes(*bytes)));
            payload = rest;
        } else {
            values.push(None);
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_exact_bits_and_missing() {
        let row = vec![
            Some(1.5),
            None,
            Some(0.0),
            Some(-0.0),
            None,
            Some(f64::MAX),
            Some(f64::MIN_POSITIVE),
            Some(0.1 + 0.2),
            None,
            Some(f64::INFINITY),
        ];
        let blob = encode_row(&row);
        // 4 count + 2 bitmap + 7 present × 8.
        assert_eq!(blob.len(), 4 + 2 + 7 * 8);
        let back = decode_row(&blob).unwrap();
        assert_eq!(back.len(), row.len());
        for (a, b) in row.iter().zip(&back) {
            assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits));
        }
    }

    #[test]
    fn nan_keeps_its_bits() {
        let back = decode_row(&encode_row(&[Some(f64::NAN)])).unwrap();
        assert_eq!(back[0].map(f64::to_bits), Some(f64::NAN.to_bits()));
    }

    #[test]
    fn empty_and_all_missing_rows() {
        assert_eq!(decode_row(&encode_row(&[])).unwrap(), vec![]);
        let blob = encode_row(&[None, None, None]);
        assert_eq!(blob.len(), 5);
        assert_eq!(decode_row(&blob).unwrap(), vec![None, None, None]);
    }

    #[test]
    fn rejects_damaged_blobs() {
        let good = encode_row(&[Some(1.0), None, Some(2.0)]);
        assert!(decode_row(&good[..3]).unwrap_err().contains("at least 4"));
        assert!(decode_row(&good[..good.len() - 1])
            .unwrap_err()
            .contains("need 16 bytes"));
        let mut stray_bit = good.clone();
        stray_bit[4] |= 0x80;
        assert!(decode_row(&stray_bit).is_err());
        let mut huge_count = good;
        huge_count[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_row(&huge_count).unwrap_err().contains("bitmap"));
    }
}
