//! The protobuf wire format, read without a schema (protobuf.dev, "Encoding": tags are
//! `field << 3 | wire type`, varints little-endian base 128, length-delimited fields a varint
//! length then the bytes). Only what gNMI's messages use; groups are refused, not skipped.

/// Why a buffer could not be read. The caller does not need the details: a message this
/// reader refuses goes to the Python reference decoder, which names the problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// One field's payload, by wire type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (8 bytes) or 5 (4 bytes): gNMI's doubles and floats, never read here.
    Fixed,
    /// Wire type 2: strings, bytes and embedded messages.
    Bytes(&'a [u8]),
}

/// The fields of one message, in wire order.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// The fields of the message in `buf`.
pub fn fields(buf: &[u8]) -> Fields<'_> {
    Fields { buf, pos: 0 }
}

/// The largest field number protobuf allows (2^29 - 1).
const MAX_FIELD: u64 = (1 << 29) - 1;

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Result<u64, Malformed> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let byte = *self.buf.get(self.pos).ok_or(Malformed)?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Malformed) // more than ten bytes
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], Malformed> {
        let end = self.pos.checked_add(len).ok_or(Malformed)?;
        let out = self.buf.get(self.pos..end).ok_or(Malformed)?;
        self.pos = end;
        Ok(out)
    }

    fn field(&mut self) -> Result<(u32, Value<'a>), Malformed> {
        let tag = self.varint()?;
        let number = tag >> 3;
        if number == 0 || number > MAX_FIELD {
            return Err(Malformed);
        }
        let value = match tag & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| Malformed)?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed
            }
            _ => return Err(Malformed), // groups (3, 4) and the undefined 6, 7
        };
        let number = u32::try_from(number).map_err(|_| Malformed)?;
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let item = self.field();
        if item.is_err() {
            self.pos = self.buf.len(); // one error ends the iteration
        }
        Some(item)
    }
}

/// A protobuf `string`: its bytes must be UTF-8 (proto3 parsers reject them otherwise).
pub fn text(bytes: &[u8]) -> Result<&str, Malformed> {
    std::str::from_utf8(bytes).map_err(|_| Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_varints_and_length_delimited_fields_in_order() {
        // field 1 varint 300, field 2 bytes "hi", field 3 fixed32
        let buf = [0x08, 0xac, 0x02, 0x12, 0x02, b'h', b'i', 0x1d, 1, 2, 3, 4];
        let got: Result<Vec<_>, _> = fields(&buf).collect();
        assert_eq!(got, Ok(vec![(1, Value::Varint(300)), (2, Value::Bytes(b"hi")), (3, Value::Fixed)]));
    }

    #[test]
    fn a_length_past_the_end_or_a_group_is_malformed() {
        assert_eq!(fields(&[0x12, 0x05, b'a']).next(), Some(Err(Malformed)));
        assert_eq!(fields(&[0x0b]).next(), Some(Err(Malformed)));
        assert_eq!(fields(&[0x00, 0x01]).next(), Some(Err(Malformed)));
    }
}
