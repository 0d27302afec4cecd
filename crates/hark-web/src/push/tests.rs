use super::*;
use hark_core::model::approval::Approval;
use hark_core::model::ids::SessionId;
use hark_core::model::item::Asker;
use hark_core::model::schema::{AskRequest, Question, QuestionOption};

fn item(request: AskRequest, approval: Option<Approval>) -> Item {
    Item {
        id: ItemId(uuid::Uuid::new_v4()),
        session_id: SessionId::unnamed(),
        run_id: None,
        asker: Asker::default(),
        request,
        approval,
        created_at: SystemTime::now(),
        timeout: Duration::from_secs(60),
        parking: None,
        mirrored: false,
    }
}

fn asking(labels: &[&str], multi_select: bool) -> Item {
    let options = labels
        .iter()
        .map(|l| QuestionOption {
            label: (*l).to_owned(),
            description: String::new(),
            preview: None,
        })
        .collect();
    item(
        AskRequest {
            questions: vec![Question {
                question: "Which?".to_owned(),
                header: "Pick".to_owned(),
                options,
                multi_select,
                default: None,
            }],
        },
        None,
    )
}

#[test]
fn buttons_only_where_one_tap_is_a_whole_answer() {
    let three = asking(&["a", "b", "c"], false);
    assert_eq!(choices(&three, PushDetail::Full).len(), 3);
    assert!(choices(&three, PushDetail::TitleOnly).is_empty());
    assert!(choices(&asking(&["a", "b", "c", "d"], false), PushDetail::Full).is_empty());
    assert!(choices(&asking(&["a", "b"], true), PushDetail::Full).is_empty());
    assert_eq!(
        reply_of(&three, "option:b").map(|r| r.name()),
        Some("answer")
    );
    assert_eq!(reply_of(&three, "option:z"), None, "not one of its options");
    assert_eq!(reply_of(&three, ALLOW), None, "a verdict on a question");

    let write = Approval {
        tool: "Write".to_owned(),
        target: "/x".to_owned(),
        preview: String::new(),
        external: false,
    };
    let approval = item(write.request(), Some(write));
    let labels: Vec<String> = choices(&approval, PushDetail::TitleOnly)
        .into_iter()
        .map(|(_, label)| label)
        .collect();
    assert_eq!(labels, ["Allow once", "Deny"]);
    assert_eq!(
        reply_of(&approval, ALLOW),
        Some(Reply::Approve(Some(Scope::Action)))
    );
    assert_eq!(reply_of(&approval, DENY), Some(Reply::Deny));
    assert_eq!(reply_of(&approval, "option:Deny"), None);
}

fn none_kept() -> Result<Option<PushSecrets>, SecretsError> {
    Ok(None)
}

#[test]
fn the_public_url_is_checked_and_its_origin_accepted() {
    let push = hark_core::config::Push {
        ntfy: Ntfy {
            server: Ntfy::default_server(),
            topic: "t".to_owned(),
            token: None,
        },
        detail: PushDetail::default(),
    };
    let web = |url: Option<&str>| hark_core::config::Web {
        listen: hark_core::config::Web::default_listen(),
        tls_cert: None,
        tls_key: None,
        origins: Vec::new(),
        public_url: url.map(|u| u.parse().unwrap()),
    };
    let options = PushOptions::from_config(
        Some(&push),
        Some(&web(Some("https://box.ts.net:8443/hark/"))),
        true,
        none_kept,
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        options.public_url.at(&["api", "push", "t"], None).as_str(),
        "https://box.ts.net:8443/hark/api/push/t"
    );
    assert_eq!(
        options.origin().ascii_serialization(),
        "https://box.ts.net:8443"
    );
    assert!(matches!(
        PushOptions::from_config(Some(&push), Some(&web(None)), true, none_kept),
        Err(PushError::NoPublicUrl)
    ));
    assert!(matches!(
        PushOptions::from_config(Some(&push), None, false, none_kept),
        Err(PushError::NoWeb)
    ));
    assert!(matches!(
        PushOptions::from_config(None, None, false, none_kept),
        Ok(None)
    ));
}
