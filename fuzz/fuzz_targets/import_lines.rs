//! Every log `netceil analyze` takes goes through the importers' line reader (bounded, UTF-8
//! or a named error), then format detection and the importer it picks; with `--format NAME`
//! any importer may be handed any text, so one is also picked by the input's first byte.
//! The same steps run over a corpus of hostile inputs in
//! crates/netceil-import/tests/import_lines.rs, which stable builds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use netceil_import::{detect, import, read_log, Format, ImportOptions};

fuzz_target!(|data: &[u8]| {
    let text = match read_log(data, "fuzz.log") {
        Ok(text) => text,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz.log:"), "{e}");
            return;
        }
    };
    let opts = ImportOptions {
        file: "fuzz.log".into(),
        ..ImportOptions::default()
    };
    if let Ok(format) = detect(&text) {
        let _ = import(format, &text, &opts);
    }
    if let Some(&b) = data.first() {
        let forced = Format::ALL[usize::from(b) % Format::ALL.len()];
        if let Err(e) = import(forced, &text, &opts) {
            assert_eq!(e.file, "fuzz.log");
        }
    }
});
