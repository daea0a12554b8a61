//! The reference backend passes the contract it defines.

use rein_approvals::PermissionClass;
use rein_testing::FakeToolBackend;
use rein_testing::contract::{ContractCase, check_backend};
use serde_json::json;

#[tokio::test]
async fn fake_tool_backend_meets_the_contract() {
    let backend = FakeToolBackend::new(&[("a.rs", "fn a() {}")]).unwrap();
    let cases = [
        ContractCase::new("read_file", json!({"path": "a.rs"}), PermissionClass::Read),
        ContractCase::new("list_files", json!({}), PermissionClass::Read),
        ContractCase::new("read_log", json!({"lines": 3}), PermissionClass::Read),
        ContractCase::new(
            "set_note",
            json!({"key": "k", "value": "v"}),
            PermissionClass::ReversibleWrite,
        ),
        ContractCase::new(
            "write_file",
            json!({"path": "b.rs", "content": "x"}),
            PermissionClass::SourceFileWrite,
        ),
        ContractCase::new(
            "delete_file",
            json!({"path": "b.rs"}),
            PermissionClass::Destructive,
        ),
    ];
    check_backend(&backend, &cases).await.unwrap();
    assert_eq!(backend.invocations("write_file"), 1);
}
