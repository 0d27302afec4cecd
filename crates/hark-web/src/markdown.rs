//! What agents write, as the page shows it: Markdown (CommonMark, with
//! tables and strikethrough) rendered to HTML that can carry nothing but
//! text and its formatting.
//!
//! Rendered here, in Rust, with `pulldown-cmark` and `ammonia` rather than
//! by a JavaScript library in the page: the page stays small (the web
//! process is most of the app's memory, and a renderer and a sanitizer in
//! it would be parsed into every page), and the sanitizer is the one
//! html5ever-based cleaner the Rust ecosystem keeps.
//!
//! Two layers, so that either alone would hold:
//! - the Markdown is rendered with what an agent might slip in turned to
//!   text: raw HTML shows as its source, an image as its alt text, a link as
//!   its text with the address beside it (never a live link: the page
//!   opens nothing an agent names);
//! - the HTML is then cleaned to a short list of tags (paragraphs,
//!   emphasis, code, lists, quotes, headings, tables) with no attribute but
//!   a `class` on `code` (its language) and `span`, and a `title` on `span`.

use std::collections::HashSet;
use std::sync::OnceLock;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// How much of one text is rendered at most (an ask weighs at most 640 KiB).
pub const MAX_TEXT_CHARS: usize = 1024 * 1024;

/// How many texts one call renders (the app's `markdown` command, the
/// web's `POST /api/markdown`).
pub const MAX_TEXTS: usize = 64;

/// More texts than [`MAX_TEXTS`] in one call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at most {MAX_TEXTS} texts a call, got {0}")]
pub struct TooManyTexts(pub usize);

/// Each of `texts` as sanitized HTML, in order.
pub fn render_all(texts: &[String]) -> Result<Vec<String>, TooManyTexts> {
    if texts.len() > MAX_TEXTS {
        return Err(TooManyTexts(texts.len()));
    }
    Ok(texts.iter().map(|t| render(t)).collect())
}

/// The Markdown `text` as sanitized HTML.
pub fn render(text: &str) -> String {
    let text = hark_core::text::clip(text, MAX_TEXT_CHARS);
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    let mut link: Vec<CowStr> = Vec::new();
    let events = Parser::new_ext(&text, options).filter_map(|event| match event {
        // What an agent writes as HTML is shown as what it wrote.
        Event::Html(html) | Event::InlineHtml(html) => Some(Event::Text(html)),
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        Event::Start(Tag::Link { dest_url, .. }) => {
            link.push(dest_url.clone());
            Some(Event::InlineHtml(
                format!("<span class=\"link\" title=\"{}\">", escape(&dest_url)).into(),
            ))
        }
        Event::End(TagEnd::Link) => {
            let url = link.pop().unwrap_or(CowStr::Borrowed(""));
            Some(Event::InlineHtml(
                format!(
                    "</span> <span class=\"url\">&lt;{}&gt;</span>",
                    escape(&url)
                )
                .into(),
            ))
        }
        other => Some(other),
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    cleaner().clean(&html).to_string()
}

/// The sanitizer: the tags and attributes the page draws, nothing more.
fn cleaner() -> &'static ammonia::Builder<'static> {
    static CLEANER: OnceLock<ammonia::Builder<'static>> = OnceLock::new();
    CLEANER.get_or_init(|| {
        let tags: HashSet<&str> = [
            "p",
            "br",
            "em",
            "strong",
            "del",
            "code",
            "pre",
            "ul",
            "ol",
            "li",
            "blockquote",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "hr",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "span",
        ]
        .into();
        let mut builder = ammonia::Builder::empty();
        builder
            .tags(tags)
            .add_tag_attributes("code", ["class"])
            .add_tag_attributes("span", ["class", "title"])
            .link_rel(None);
        builder
    })
}

/// `text` safe inside a quoted HTML attribute or an element
/// (pulldown-cmark's own escaping).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Writing to a String cannot fail.
    let _ = pulldown_cmark_escape::escape_html(&mut out, text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_lists_and_emphasis_render() {
        let html =
            render("Use `sqlite`:\n\n- *one* file\n- **no** server\n\n```sql\nSELECT 1;\n```\n");
        assert!(html.contains("<code>sqlite</code>"), "{html}");
        assert!(html.contains("<li><em>one</em> file</li>"), "{html}");
        assert!(html.contains("<strong>no</strong>"), "{html}");
        assert!(
            html.contains("<pre><code class=\"language-sql\">SELECT 1;\n</code></pre>"),
            "{html}"
        );
    }

    #[test]
    fn html_scripts_images_and_links_are_inert() {
        let html = render(
            "<script>alert(1)</script>\n\n<img src=http://evil/x.png onerror=alert(1)>\n\n![alt text](http://evil/y.png) [click](javascript:alert(1)) <b onclick=x>b</b>",
        );
        // No element but the allowed ones (the rest is escaped text).
        for bad in ["<script", "<img", "<a ", "<b "] {
            assert!(!html.contains(bad), "{bad} in {html}");
        }
        // Shown as text: the operator sees what the agent tried.
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(html.contains("alt text"), "{html}");
        assert!(
            html.contains("<span class=\"link\" title=\"javascript:alert(1)\">click</span>"),
            "{html}"
        );
        assert!(html.contains("&lt;javascript:alert(1)&gt;"), "{html}");
    }

    #[test]
    fn a_quote_in_a_link_cannot_leave_its_attribute() {
        let html = render("[x](http://a/\"onmouseover=\"alert(1))");
        assert!(
            html.contains(r#"title="http://a/&quot;onmouseover=&quot;alert(1)""#),
            "{html}"
        );
    }
}
