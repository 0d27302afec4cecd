//! The AppUserModelID a Windows shortcut (`.lnk`) carries, read from its
//! bytes: Windows shows a desktop app's toasts under an id only if a
//! Start-menu shortcut carries it, so hark checks its own shortcut
//! (which its installer, `scripts/windows/hark.nsi`, makes). Plain parsing,
//! compiled everywhere so that it is tested everywhere.
//!
//! The format ([MS-SHLLINK]): a 76-byte header whose flags say which
//! parts follow (an item-id list, the link info, up to five counted
//! strings), then extra-data blocks, each `size, signature, data`, ended
//! by a block smaller than 4 bytes. The property store block (signature
//! `0xA0000009`) holds serialized property storages ([MS-PROPSTORE]): per
//! format id, values named by an integer id. System.AppUserModel.ID is
//! `{9F4C2855-9F79-4B39-A8D0-E1D42DE1D5F3}`, id 5, a `VT_LPWSTR`.

/// The header's size, and its first four bytes.
const HEADER_SIZE: usize = 0x4C;
/// CLSID_ShellLink, {00021401-0000-0000-C000-000000000046}, as stored.
const SHELL_LINK_CLSID: [u8; 16] = [
    0x01, 0x14, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46,
];
const HAS_LINK_TARGET_ID_LIST: u32 = 0x1;
const HAS_LINK_INFO: u32 = 0x2;
/// HasName, HasRelativePath, HasWorkingDir, HasArguments, HasIconLocation:
/// each a counted string in StringData.
const STRING_FLAGS: [u32; 5] = [0x4, 0x8, 0x10, 0x20, 0x40];
const IS_UNICODE: u32 = 0x80;
const PROPERTY_STORE_SIGNATURE: u32 = 0xA000_0009;
/// A serialized property storage's version, "1SPS".
const STORAGE_VERSION: u32 = 0x5350_5331;
/// PKEY_AppUserModel_ID's format id, as stored.
const APP_USER_MODEL_FMTID: [u8; 16] = [
    0x55, 0x28, 0x4C, 0x9F, 0x79, 0x9F, 0x39, 0x4B, 0xA8, 0xD0, 0xE1, 0xD4, 0x2D, 0xE1, 0xD5, 0xF3,
];
const APP_USER_MODEL_ID_PID: u32 = 5;
const VT_LPWSTR: u16 = 0x1F;

/// The AppUserModelID the shortcut `link` carries, if it is a shell link
/// and carries one; anything malformed is "none".
pub fn app_user_model_id(link: &[u8]) -> Option<String> {
    let mut at = Reader { bytes: link, at: 0 };
    if at.u32()? as usize != HEADER_SIZE || at.take(16)? != SHELL_LINK_CLSID {
        return None;
    }
    let flags = at.u32()?;
    at.at = HEADER_SIZE;
    if flags & HAS_LINK_TARGET_ID_LIST != 0 {
        let size = at.u16()?;
        at.take(size.into())?;
    }
    if flags & HAS_LINK_INFO != 0 {
        // Its size counts its own four bytes.
        let size = at.u32()? as usize;
        at.take(size.checked_sub(4)?)?;
    }
    let unit = if flags & IS_UNICODE != 0 { 2 } else { 1 };
    for flag in STRING_FLAGS {
        if flags & flag != 0 {
            let chars = usize::from(at.u16()?);
            at.take(chars * unit)?;
        }
    }
    loop {
        let size = at.u32()? as usize;
        if size < 4 {
            return None;
        }
        let block = at.take(size - 4)?;
        let mut block = Reader {
            bytes: block,
            at: 0,
        };
        if block.u32()? == PROPERTY_STORE_SIGNATURE {
            return property_store(&block.bytes[block.at..]);
        }
    }
}

/// PKEY_AppUserModel_ID in a serialized property store.
fn property_store(store: &[u8]) -> Option<String> {
    let mut at = Reader {
        bytes: store,
        at: 0,
    };
    loop {
        let size = at.u32()? as usize;
        if size == 0 {
            return None;
        }
        let storage = at.take(size.checked_sub(4)?)?;
        let mut storage = Reader {
            bytes: storage,
            at: 0,
        };
        if storage.u32()? != STORAGE_VERSION {
            return None;
        }
        if storage.take(16)? != APP_USER_MODEL_FMTID {
            continue;
        }
        loop {
            let size = storage.u32()? as usize;
            if size == 0 {
                break;
            }
            let value = storage.take(size.checked_sub(4)?)?;
            let mut value = Reader {
                bytes: value,
                at: 0,
            };
            let pid = value.u32()?;
            value.take(1)?;
            if pid == APP_USER_MODEL_ID_PID && value.u16()? == VT_LPWSTR {
                value.take(2)?;
                // The length in characters, its NUL counted.
                let chars = value.u32()? as usize;
                let units: Vec<u16> = value
                    .take(chars.checked_mul(2)?)?
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .take_while(|&u| u != 0)
                    .collect();
                return String::from_utf16(&units).ok();
            }
        }
    }
}

/// Little-endian reads that stop at the end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let taken = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(taken)
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32s(n: usize) -> [u8; 4] {
        (n as u32).to_le_bytes()
    }

    /// A VT_LPWSTR value `text` of property `pid`, serialized.
    fn value(pid: u32, text: &str) -> Vec<u8> {
        let units: Vec<u16> = text.encode_utf16().chain([0]).collect();
        let mut body = pid.to_le_bytes().to_vec();
        body.push(0);
        body.extend(VT_LPWSTR.to_le_bytes());
        body.extend([0, 0]);
        body.extend(u32s(units.len()));
        body.extend(units.iter().flat_map(|u| u.to_le_bytes()));
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        [u32s(body.len() + 4).to_vec(), body].concat()
    }

    fn storage(fmtid: [u8; 16], values: &[Vec<u8>]) -> Vec<u8> {
        let mut body = STORAGE_VERSION.to_le_bytes().to_vec();
        body.extend(fmtid);
        values.iter().for_each(|v| body.extend(v));
        body.extend([0; 4]);
        [u32s(body.len() + 4).to_vec(), body].concat()
    }

    /// A shell link to `C:\hark\hark-app.exe` (an item-id list, link info
    /// and a working directory, as Windows writes them) with `blocks`.
    fn link(blocks: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = u32s(HEADER_SIZE).to_vec();
        bytes.extend(SHELL_LINK_CLSID);
        let flags = HAS_LINK_TARGET_ID_LIST | HAS_LINK_INFO | 0x10 | IS_UNICODE;
        bytes.extend(flags.to_le_bytes());
        bytes.resize(HEADER_SIZE, 0);
        bytes.extend(6u16.to_le_bytes());
        bytes.extend([4, 0, 0xAA, 0xBB, 0, 0]);
        let info = b"\x1c\x00\x00\x00C:\\hark\\hark-app.exe\x00";
        bytes.extend(u32s(info.len() + 4));
        bytes.extend(info);
        let dir: Vec<u8> = "C:\\hark"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        bytes.extend(7u16.to_le_bytes());
        bytes.extend(dir);
        for block in blocks {
            bytes.extend(block);
        }
        bytes.extend([0; 4]);
        bytes
    }

    fn block(signature: u32, data: &[u8]) -> Vec<u8> {
        [&u32s(data.len() + 8)[..], &signature.to_le_bytes(), data].concat()
    }

    fn store(storages: &[Vec<u8>]) -> Vec<u8> {
        let mut data: Vec<u8> = storages.concat();
        data.extend([0; 4]);
        block(PROPERTY_STORE_SIGNATURE, &data)
    }

    #[test]
    fn the_id_is_read_from_the_property_store_past_the_other_parts() {
        let other_fmtid = [7; 16];
        let bytes = link(&[
            // A console block (NT_CONSOLE_PROPS), skipped.
            block(0xA000_0002, &[0; 12]),
            store(&[
                storage(other_fmtid, &[value(5, "not this")]),
                storage(
                    APP_USER_MODEL_FMTID,
                    &[value(2, "a relaunch command"), value(5, "dev.hark.app")],
                ),
            ]),
        ]);
        assert_eq!(app_user_model_id(&bytes).as_deref(), Some("dev.hark.app"));
    }

    #[test]
    fn a_link_without_the_id_or_malformed_carries_none() {
        let plain = link(&[]);
        assert_eq!(app_user_model_id(&plain), None);
        let other = link(&[store(&[storage(
            APP_USER_MODEL_FMTID,
            &[value(2, "a relaunch command")],
        )])]);
        assert_eq!(app_user_model_id(&other), None);
        let with = link(&[store(&[storage(
            APP_USER_MODEL_FMTID,
            &[value(5, "dev.hark.app")],
        )])]);
        for cut in [0, 3, 20, HEADER_SIZE + 3, with.len() - 30] {
            assert_eq!(app_user_model_id(&with[..cut]), None, "cut at {cut}");
        }
        let mut not_a_link = with.clone();
        not_a_link[4] ^= 1;
        assert_eq!(app_user_model_id(&not_a_link), None);
    }
}
