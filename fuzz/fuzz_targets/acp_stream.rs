//! An ACP agent's session updates, line by line, through rein's reducer:
//! it never panics, and its outcome and summary are always there.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rein_fuzz::reduce(rein_host::acp_stream::AcpStream::new("/work"), data);
});
