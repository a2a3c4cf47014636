//! The actions: Pi's ids, their default keys and what each does, and
//! Pi's older bare names for them.

/// One thing a key can do in the UI; each has Pi's action id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyAction {
    /// `tui.editor.cursorUp`: the line above, older history at the top.
    CursorUp,
    /// `tui.editor.cursorDown`: the line below, newer history at the bottom.
    CursorDown,
    /// `tui.editor.historyPrevious`: the previous history entry, wherever the caret is.
    HistoryPrevious,
    /// `tui.editor.historyNext`: the next history entry, wherever the caret is.
    HistoryNext,
    /// `tui.editor.historySearch`: reverse incremental history search (ours; Pi has none).
    HistorySearch,
    /// `tui.editor.cursorLeft`.
    CursorLeft,
    /// `tui.editor.cursorRight`.
    CursorRight,
    /// `tui.editor.cursorWordLeft`.
    CursorWordLeft,
    /// `tui.editor.cursorWordRight`.
    CursorWordRight,
    /// `tui.editor.cursorLineStart`.
    CursorLineStart,
    /// `tui.editor.cursorLineEnd`.
    CursorLineEnd,
    /// `tui.editor.jumpForward`: the caret to the next occurrence of the next key typed.
    JumpForward,
    /// `tui.editor.jumpBackward`: the caret to the previous occurrence of the next key typed.
    JumpBackward,
    /// `tui.editor.deleteCharBackward`.
    DeleteCharBackward,
    /// `tui.editor.deleteCharForward` (Ctrl+D on an empty editor is `app.exit`).
    DeleteCharForward,
    /// `tui.editor.deleteWordBackward`: into the kill ring.
    DeleteWordBackward,
    /// `tui.editor.deleteWordForward`: into the kill ring.
    DeleteWordForward,
    /// `tui.editor.deleteToLineStart`: into the kill ring.
    DeleteToLineStart,
    /// `tui.editor.deleteToLineEnd`: into the kill ring.
    DeleteToLineEnd,
    /// `tui.editor.yank`: the newest kill at the caret.
    Yank,
    /// `tui.editor.yankPop`: right after a yank, the kill before it instead.
    YankPop,
    /// `tui.editor.undo`.
    Undo,
    /// `tui.input.newLine`.
    NewLine,
    /// `tui.input.submit`: send (steer while the agent runs).
    Submit,
    /// `tui.input.tab`: complete a path, a `/command` or an `@file`.
    Tab,
    /// `tui.select.up`: in a menu.
    SelectUp,
    /// `tui.select.down`: in a menu.
    SelectDown,
    /// `tui.select.pageUp`: in a menu.
    SelectPageUp,
    /// `tui.select.pageDown`: in a menu.
    SelectPageDown,
    /// `tui.select.confirm`: in a menu.
    SelectConfirm,
    /// `tui.select.cancel`: in a menu.
    SelectCancel,
    /// `app.interrupt`: stop the run; queued messages return to the editor.
    Interrupt,
    /// `app.clear`: clear the editor, else interrupt, else (twice) exit.
    Clear,
    /// `app.exit`: leave, when the editor is empty.
    Exit,
    /// `app.suspend`: stop the process (job control).
    Suspend,
    /// `app.tools.expand`: expand or collapse tool output.
    ToolsExpand,
    /// `app.message.followUp`: queue a follow-up (idle: like Enter).
    FollowUp,
    /// `app.message.dequeue`: queued messages back into the editor.
    Dequeue,
    /// `app.model.select`: open the model selector.
    ModelSelect,
    /// `app.model.cycleForward`: the next model of the current provider.
    ModelCycleForward,
    /// `app.model.cycleBackward`: the previous model of the current provider.
    ModelCycleBackward,
    /// `app.thinking.cycle`: the model's next thinking level.
    ThinkingCycle,
    /// `app.session.resume`: open the resume picker.
    SessionResume,
    /// `app.session.tree`: open the session tree.
    SessionTree,
    /// `app.tree.filter.default`: in the session tree, the default view.
    TreeFilterDefault,
    /// `app.tree.filter.noTools`: in the session tree, hide tool results (again: default).
    TreeFilterNoTools,
    /// `app.tree.filter.userOnly`: in the session tree, user messages only (again: default).
    TreeFilterUserOnly,
    /// `app.tree.filter.labeledOnly`: in the session tree, labelled entries only (again: default).
    TreeFilterLabeledOnly,
    /// `app.tree.filter.all`: in the session tree, every entry (again: default).
    TreeFilterAll,
    /// `app.tree.filter.cycleForward`: in the session tree, the next filter.
    TreeFilterCycleForward,
    /// `app.tree.filter.cycleBackward`: in the session tree, the previous filter.
    TreeFilterCycleBackward,
    /// `app.tree.foldOrUp`: in the session tree, fold the branch here, else up to its start.
    TreeFoldOrUp,
    /// `app.tree.unfoldOrDown`: in the session tree, unfold here, else down to the next branch.
    TreeUnfoldOrDown,
    /// `app.tree.editLabel`: in the session tree, set or clear the entry's label.
    TreeEditLabel,
    /// `app.tree.toggleLabelTimestamp`: in the session tree, show when labels were set.
    TreeToggleLabelTimestamp,
    /// `app.session.rename`: in the resume picker, name the session.
    SessionRename,
    /// `app.session.delete`: in the resume picker, delete the session file (asks first).
    SessionDelete,
    /// `app.session.deleteNoninvasive`: in the resume picker, delete when the query is empty.
    SessionDeleteNoninvasive,
    /// `app.session.toggleSort`: in the resume picker, threaded, recent or relevance order.
    SessionToggleSort,
    /// `app.session.togglePath`: in the resume picker, show each session's file.
    SessionTogglePath,
    /// `app.session.toggleNamedFilter`: in the resume picker, named sessions only.
    SessionToggleNamedFilter,
}

/// Every action: its id, its default keys and what it does.
const DEFINITIONS: &[(KeyAction, &str, &[&str], &str)] = {
    use KeyAction::*;
    &[
        (
            CursorUp,
            "tui.editor.cursorUp",
            &["up"],
            "Move cursor up / older history",
        ),
        (
            CursorDown,
            "tui.editor.cursorDown",
            &["down"],
            "Move cursor down / newer history",
        ),
        (
            HistoryPrevious,
            "tui.editor.historyPrevious",
            &[],
            "Previous prompt history entry",
        ),
        (
            HistoryNext,
            "tui.editor.historyNext",
            &[],
            "Next prompt history entry",
        ),
        (
            HistorySearch,
            "tui.editor.historySearch",
            &["ctrl+r"],
            "Search prompt history",
        ),
        (
            CursorLeft,
            "tui.editor.cursorLeft",
            &["left", "ctrl+b"],
            "Move cursor left",
        ),
        (
            CursorRight,
            "tui.editor.cursorRight",
            &["right", "ctrl+f"],
            "Move cursor right",
        ),
        (
            CursorWordLeft,
            "tui.editor.cursorWordLeft",
            &["alt+left", "ctrl+left", "alt+b"],
            "Move cursor word left",
        ),
        (
            CursorWordRight,
            "tui.editor.cursorWordRight",
            &["alt+right", "ctrl+right", "alt+f"],
            "Move cursor word right",
        ),
        (
            CursorLineStart,
            "tui.editor.cursorLineStart",
            &["home", "ctrl+a"],
            "Move to line start",
        ),
        (
            CursorLineEnd,
            "tui.editor.cursorLineEnd",
            &["end", "ctrl+e"],
            "Move to line end",
        ),
        (
            JumpForward,
            "tui.editor.jumpForward",
            &["ctrl+]"],
            "Jump forward to character",
        ),
        (
            JumpBackward,
            "tui.editor.jumpBackward",
            &["ctrl+alt+]"],
            "Jump backward to character",
        ),
        (
            DeleteCharBackward,
            "tui.editor.deleteCharBackward",
            &["backspace"],
            "Delete character backward",
        ),
        (
            DeleteCharForward,
            "tui.editor.deleteCharForward",
            &["delete", "ctrl+d"],
            "Delete character forward",
        ),
        (
            DeleteWordBackward,
            "tui.editor.deleteWordBackward",
            &["ctrl+w", "alt+backspace"],
            "Delete word backward",
        ),
        (
            DeleteWordForward,
            "tui.editor.deleteWordForward",
            &["alt+d", "alt+delete"],
            "Delete word forward",
        ),
        (
            DeleteToLineStart,
            "tui.editor.deleteToLineStart",
            &["ctrl+u"],
            "Delete to line start",
        ),
        (
            DeleteToLineEnd,
            "tui.editor.deleteToLineEnd",
            &["ctrl+k"],
            "Delete to line end",
        ),
        (
            Yank,
            "tui.editor.yank",
            &["ctrl+y"],
            "Paste the most recently deleted text",
        ),
        (
            YankPop,
            "tui.editor.yankPop",
            &["alt+y"],
            "Cycle through deleted text after a yank",
        ),
        (Undo, "tui.editor.undo", &["ctrl+-"], "Undo the last edit"),
        (
            NewLine,
            "tui.input.newLine",
            &["shift+enter", "ctrl+j"],
            "Insert a new line",
        ),
        (
            Submit,
            "tui.input.submit",
            &["enter"],
            "Submit (steer while the agent runs)",
        ),
        (Tab, "tui.input.tab", &["tab"], "Complete"),
        (SelectUp, "tui.select.up", &["up"], "Move selection up"),
        (
            SelectDown,
            "tui.select.down",
            &["down"],
            "Move selection down",
        ),
        (
            SelectPageUp,
            "tui.select.pageUp",
            &["pageUp"],
            "Selection page up",
        ),
        (
            SelectPageDown,
            "tui.select.pageDown",
            &["pageDown"],
            "Selection page down",
        ),
        (
            SelectConfirm,
            "tui.select.confirm",
            &["enter"],
            "Confirm selection",
        ),
        (
            SelectCancel,
            "tui.select.cancel",
            &["escape", "ctrl+c"],
            "Cancel selection",
        ),
        (Interrupt, "app.interrupt", &["escape"], "Cancel or abort"),
        (
            Clear,
            "app.clear",
            &["ctrl+c"],
            "Clear editor / interrupt / twice: exit",
        ),
        (
            Exit,
            "app.exit",
            &["ctrl+d"],
            "Exit when the editor is empty",
        ),
        (Suspend, "app.suspend", &["ctrl+z"], "Suspend to background"),
        (
            ToolsExpand,
            "app.tools.expand",
            &["ctrl+o"],
            "Toggle tool output",
        ),
        (
            FollowUp,
            "app.message.followUp",
            &["alt+enter"],
            "Queue a follow-up message",
        ),
        (
            Dequeue,
            "app.message.dequeue",
            &["alt+up"],
            "Restore queued messages",
        ),
        (
            ModelSelect,
            "app.model.select",
            &["ctrl+l"],
            "Open the model selector",
        ),
        (
            ModelCycleForward,
            "app.model.cycleForward",
            &["ctrl+p"],
            "Next model of the provider",
        ),
        (
            ModelCycleBackward,
            "app.model.cycleBackward",
            &["shift+ctrl+p"],
            "Previous model of the provider",
        ),
        (
            ThinkingCycle,
            "app.thinking.cycle",
            &["shift+tab"],
            "Cycle the thinking level",
        ),
        (
            SessionResume,
            "app.session.resume",
            &[],
            "Open the resume picker",
        ),
        (
            SessionTree,
            "app.session.tree",
            &[],
            "Open the session tree",
        ),
        (
            TreeFilterDefault,
            "app.tree.filter.default",
            &["ctrl+d"],
            "Session tree: default view",
        ),
        (
            TreeFilterNoTools,
            "app.tree.filter.noTools",
            &["ctrl+t"],
            "Session tree: hide tool results",
        ),
        (
            TreeFilterUserOnly,
            "app.tree.filter.userOnly",
            &["ctrl+u"],
            "Session tree: user messages only",
        ),
        (
            TreeFilterLabeledOnly,
            "app.tree.filter.labeledOnly",
            &["ctrl+l"],
            "Session tree: labelled entries only",
        ),
        (
            TreeFilterAll,
            "app.tree.filter.all",
            &["ctrl+a"],
            "Session tree: every entry",
        ),
        (
            TreeFilterCycleForward,
            "app.tree.filter.cycleForward",
            &["ctrl+o"],
            "Session tree: next filter",
        ),
        (
            TreeFilterCycleBackward,
            "app.tree.filter.cycleBackward",
            &["shift+ctrl+o"],
            "Session tree: previous filter",
        ),
        (
            TreeFoldOrUp,
            "app.tree.foldOrUp",
            &["ctrl+left", "alt+left"],
            "Session tree: fold the branch or move up",
        ),
        (
            TreeUnfoldOrDown,
            "app.tree.unfoldOrDown",
            &["ctrl+right", "alt+right"],
            "Session tree: unfold the branch or move down",
        ),
        (
            TreeEditLabel,
            "app.tree.editLabel",
            &["shift+l"],
            "Session tree: edit the entry's label",
        ),
        (
            TreeToggleLabelTimestamp,
            "app.tree.toggleLabelTimestamp",
            &["shift+t"],
            "Session tree: label times",
        ),
        (
            SessionRename,
            "app.session.rename",
            &["ctrl+r"],
            "Resume picker: rename the session",
        ),
        (
            SessionDelete,
            "app.session.delete",
            &["ctrl+d"],
            "Resume picker: delete the session",
        ),
        (
            SessionDeleteNoninvasive,
            "app.session.deleteNoninvasive",
            &["ctrl+backspace"],
            "Resume picker: delete when the query is empty",
        ),
        (
            SessionToggleSort,
            "app.session.toggleSort",
            &["ctrl+s"],
            "Resume picker: threaded, recent or relevance order",
        ),
        (
            SessionTogglePath,
            "app.session.togglePath",
            &["ctrl+p"],
            "Resume picker: show the session files",
        ),
        (
            SessionToggleNamedFilter,
            "app.session.toggleNamedFilter",
            &["ctrl+n"],
            "Resume picker: named sessions only",
        ),
    ]
};

/// Pi's bare names from before action ids had namespaces.
const LEGACY_NAMES: &[(&str, &str)] = &[
    ("cursorUp", "tui.editor.cursorUp"),
    ("cursorDown", "tui.editor.cursorDown"),
    ("cursorLeft", "tui.editor.cursorLeft"),
    ("cursorRight", "tui.editor.cursorRight"),
    ("cursorWordLeft", "tui.editor.cursorWordLeft"),
    ("cursorWordRight", "tui.editor.cursorWordRight"),
    ("cursorLineStart", "tui.editor.cursorLineStart"),
    ("cursorLineEnd", "tui.editor.cursorLineEnd"),
    ("jumpForward", "tui.editor.jumpForward"),
    ("jumpBackward", "tui.editor.jumpBackward"),
    ("deleteCharBackward", "tui.editor.deleteCharBackward"),
    ("deleteCharForward", "tui.editor.deleteCharForward"),
    ("deleteWordBackward", "tui.editor.deleteWordBackward"),
    ("deleteWordForward", "tui.editor.deleteWordForward"),
    ("deleteToLineStart", "tui.editor.deleteToLineStart"),
    ("deleteToLineEnd", "tui.editor.deleteToLineEnd"),
    ("yank", "tui.editor.yank"),
    ("yankPop", "tui.editor.yankPop"),
    ("undo", "tui.editor.undo"),
    ("newLine", "tui.input.newLine"),
    ("submit", "tui.input.submit"),
    ("tab", "tui.input.tab"),
    ("selectUp", "tui.select.up"),
    ("selectDown", "tui.select.down"),
    ("selectPageUp", "tui.select.pageUp"),
    ("selectPageDown", "tui.select.pageDown"),
    ("selectConfirm", "tui.select.confirm"),
    ("selectCancel", "tui.select.cancel"),
    ("interrupt", "app.interrupt"),
    ("clear", "app.clear"),
    ("exit", "app.exit"),
    ("suspend", "app.suspend"),
    ("expandTools", "app.tools.expand"),
    ("followUp", "app.message.followUp"),
    ("dequeue", "app.message.dequeue"),
    ("selectModel", "app.model.select"),
    ("cycleModelForward", "app.model.cycleForward"),
    ("cycleModelBackward", "app.model.cycleBackward"),
    ("cycleThinkingLevel", "app.thinking.cycle"),
    ("resume", "app.session.resume"),
    ("tree", "app.session.tree"),
    ("treeFoldOrUp", "app.tree.foldOrUp"),
    ("treeUnfoldOrDown", "app.tree.unfoldOrDown"),
    ("treeEditLabel", "app.tree.editLabel"),
    ("treeToggleLabelTimestamp", "app.tree.toggleLabelTimestamp"),
    ("toggleSessionPath", "app.session.togglePath"),
    ("toggleSessionSort", "app.session.toggleSort"),
    ("toggleSessionNamedFilter", "app.session.toggleNamedFilter"),
    ("renameSession", "app.session.rename"),
    ("deleteSession", "app.session.delete"),
    ("deleteSessionNoninvasive", "app.session.deleteNoninvasive"),
];

impl KeyAction {
    /// Every action, in the order of the key table.
    pub fn all() -> impl Iterator<Item = KeyAction> {
        DEFINITIONS.iter().map(|d| d.0)
    }

    fn definition(
        self,
    ) -> &'static (
        KeyAction,
        &'static str,
        &'static [&'static str],
        &'static str,
    ) {
        // Every variant has a row: `definitions_cover_every_action` checks it.
        DEFINITIONS
            .iter()
            .find(|d| d.0 == self)
            .unwrap_or(&DEFINITIONS[0])
    }

    /// Pi's id, e.g. `tui.editor.undo`.
    pub fn id(self) -> &'static str {
        self.definition().1
    }

    /// What it does, in a few words.
    pub fn description(self) -> &'static str {
        self.definition().3
    }

    /// The keys it has when no file says otherwise.
    pub fn default_keys(self) -> &'static [&'static str] {
        self.definition().2
    }

    /// The action with this id (a legacy bare name too).
    pub fn from_id(id: &str) -> Option<KeyAction> {
        let id = LEGACY_NAMES
            .iter()
            .find(|(old, _)| *old == id)
            .map_or(id, |(_, new)| new);
        DEFINITIONS.iter().find(|d| d.1 == id).map(|d| d.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keybindings::KeyCombo;

    #[test]
    fn definitions_cover_every_action_once() {
        let mut seen = std::collections::BTreeSet::new();
        for (action, id, keys, _) in DEFINITIONS {
            assert!(seen.insert(*action), "{id} twice");
            assert_eq!(KeyAction::from_id(id), Some(*action));
            for k in *keys {
                assert!(KeyCombo::parse(k).is_some(), "{id}: {k}");
            }
        }
        for (old, new) in LEGACY_NAMES {
            assert!(KeyAction::from_id(new).is_some(), "{old} -> {new}");
        }
    }
}
