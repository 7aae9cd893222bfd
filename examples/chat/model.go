package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/recourse-dev/recourse/broker"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/layer"
)

// tickEvery is how often a live countdown is redrawn.
const tickEvery = 100 * time.Millisecond

// promptQuestion ends the status line while an admission hook waits for the
// user (R8): y allows the resend, n, Esc or Enter rejects it.
const promptQuestion = "the server may have run this request; send again? y/N"

// entry is one transcript entry: a user or an assistant message.
type entry struct {
	role chat.Role
	text string
}

// noticeMsg carries one broker notice to the UI, with the time the broker
// delivered it (the start of a retry's countdown).
type noticeMsg struct {
	notice broker.Notice
	at     time.Time
}

// chunkMsg is streamed assistant content of the running turn.
type chunkMsg string

// turnDoneMsg ends the running turn; err is its failure, nil on success.
type turnDoneMsg struct{ err error }

// admitMsg asks the user whether a failed request may be sent again. The
// answer goes to reply (buffered, so the UI never blocks); ctx is the
// hook's context: once it is done nobody waits for the answer any more.
type admitMsg struct {
	ctx     context.Context
	reply   chan<- layer.Decision
	failure string
}

// tickMsg redraws a live countdown.
type tickMsg time.Time

// Model is the chat's bubbletea model: a transcript of user and assistant
// messages, one transient status line and an input line. The status line
// is a broker.Status fed with every notice of the broker (R17.2): a retry
// notice shows "retrying LLM request after HTTP 504 (attempt 2/4 in 1.2s)"
// and counts the wait down on every tick, a continuation notice shows
// "LLM stream interrupted; continuing generation (1/3): …", and the next
// sign of activity clears it. Notices never enter the transcript. While an
// admission hook waits, the status line asks the user instead.
//
// A Model must be used through its pointer. Update and View run on the
// program's goroutine; notify and admit may be called from any goroutine.
type Model struct {
	ctx    context.Context // done when the chat ends
	stop   context.CancelFunc
	events chan tea.Msg // notices, chunks, turn ends and admission requests, in order
	wg     sync.WaitGroup

	session *broker.Session
	title   string

	width, height int
	transcript    []entry
	open          bool // the last transcript entry receives streamed content
	input         string

	status   *broker.Status
	statusAt time.Time // when the retry notice on the status line arrived
	now      time.Time // the clock of the last tick
	ticking  bool
	prompt   *admitMsg

	busy       bool
	cancelTurn context.CancelFunc
	errText    string
}

// NewModel returns a model whose turns run under ctx; Close ends them.
// Attach a session before running it.
func NewModel(ctx context.Context) *Model {
	m := &Model{events: make(chan tea.Msg), status: new(broker.Status)}
	m.ctx, m.stop = context.WithCancel(ctx)
	return m
}

// attach sets the session the model sends to and the header's title.
func (m *Model) attach(s *broker.Session, title string) {
	m.session, m.title = s, title
}

// Close cancels a running turn and waits for it to end.
func (m *Model) Close() {
	m.stop()
	m.wg.Wait()
}

// post hands msg to the UI; it gives up when ctx or the chat is done.
func (m *Model) post(ctx context.Context, msg tea.Msg) bool {
	select {
	case m.events <- msg:
		return true
	case <-ctx.Done():
		return false
	case <-m.ctx.Done():
		return false
	}
}

// notify is the broker's WithNotices callback: it hands the notice to the
// UI, which applies it to the status line. It blocks until the UI took it,
// so notices and content keep their order.
func (m *Model) notify(n broker.Notice) {
	m.post(m.ctx, noticeMsg{notice: n, at: time.Now()})
}

// admit is the admission hook of the retry policy (R8). A failure that the
// default rule would resend anyway (OpenAI, or nothing provably sent) is
// allowed at once; an ambiguous one (Ollama, oMLX: the model may have run)
// is put to the user, and the hook waits for the answer or for ctx.
func (m *Model) admit(ctx context.Context, req layer.AdmissionRequest) (layer.Decision, error) {
	if !layer.AdmissionRequired(req.Facts, req.Failure) {
		return layer.Allow, nil
	}
	reply := make(chan layer.Decision, 1)
	if !m.post(ctx, admitMsg{ctx: ctx, reply: reply, failure: broker.FailureText(&req.Failure)}) {
		return "", ctx.Err()
	}
	select {
	case d := <-reply:
		return d, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// listen waits for the next message of the running turn or the hooks.
func (m *Model) listen() tea.Msg {
	select {
	case msg := <-m.events:
		return msg
	case <-m.ctx.Done():
		return nil
	}
}

// tick schedules the next countdown redraw.
func tick() tea.Cmd {
	return tea.Tick(tickEvery, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Init starts listening for the broker's messages.
func (m *Model) Init() tea.Cmd { return m.listen }

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.PasteMsg:
		if m.prompt == nil {
			m.input += strings.ReplaceAll(msg.Content, "\n", " ")
		}
	case noticeMsg:
		m.applyNotice(msg)
		return m, tea.Batch(m.listen, m.startTicking())
	case chunkMsg:
		m.activity(broker.ActivityContent)
		if !m.open {
			m.transcript = append(m.transcript, entry{role: chat.Assistant})
			m.open = true
		}
		m.transcript[len(m.transcript)-1].text += string(msg)
		return m, m.listen
	case admitMsg:
		if msg.ctx.Err() == nil {
			p := msg
			m.prompt = &p
			// The retry an earlier notice announced was sent and failed:
			// its line is stale. (A Status clears only on an activity
			// signal, and the broker has none for "the retry was sent".)
			m.status = new(broker.Status)
		}
		return m, tea.Batch(m.listen, m.startTicking())
	case turnDoneMsg:
		m.endTurn(msg.err)
		return m, m.listen
	case tickMsg:
		m.now = time.Time(msg)
		if m.prompt != nil && m.prompt.ctx.Err() != nil {
			m.prompt = nil // the hook stopped waiting: the request ended
		}
		if m.prompt != nil || m.status.Line() != "" {
			return m, tick()
		}
		m.ticking = false
	}
	return m, nil
}

// startTicking starts the countdown ticks unless they run already.
func (m *Model) startTicking() tea.Cmd {
	if m.ticking || (m.prompt == nil && m.status.Line() == "") {
		return nil
	}
	m.ticking = true
	return tick()
}

// applyNotice puts a notice on the status line, never into the transcript.
func (m *Model) applyNotice(msg noticeMsg) {
	n := msg.notice
	m.status.Apply(n)
	switch {
	case n.Retry != nil:
		m.statusAt, m.now = msg.at, msg.at
	case n.Continuation != nil:
		// The unfinished text block was not committed: take back what was
		// shown of it, so the transcript matches the history.
		if d := n.Continuation.Discarded; m.open && d > 0 {
			last := &m.transcript[len(m.transcript)-1]
			last.text = last.text[:max(len(last.text)-d, 0)]
			if last.text == "" {
				m.transcript, m.open = m.transcript[:len(m.transcript)-1], false
			}
		}
	case n.Activity != nil:
		m.prompt = nil // the run moved past any admission wait
		if n.Activity.Kind == broker.ActivityCompletionStarted && m.open {
			// A new completion gets its own assistant entry, as in the history.
			m.open = false
		}
	}
}

// activity applies an activity signal the UI itself observed.
func (m *Model) activity(k broker.ActivityKind) {
	m.status.Apply(broker.Notice{Event: broker.EventActivity, Activity: &broker.Activity{Kind: k}})
}

// key handles a key press.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		m.answer(layer.Reject)
		if m.cancelTurn != nil {
			m.cancelTurn()
		}
		return tea.Quit
	}
	if m.prompt != nil {
		switch k.String() {
		case "y", "Y":
			m.answer(layer.Allow)
		case "n", "N", "esc", "enter":
			m.answer(layer.Reject)
		}
		return nil
	}
	switch k.String() {
	case "enter":
		return m.send()
	case "esc":
		if m.busy && m.cancelTurn != nil {
			m.cancelTurn()
		} else {
			m.input = ""
		}
	case "backspace":
		if r := []rune(m.input); len(r) > 0 {
			m.input = string(r[:len(r)-1])
		}
	case "ctrl+u":
		m.input = ""
	default:
		if k.Text != "" && k.Mod&^tea.ModShift == 0 {
			m.input += k.Text
		}
	}
	return nil
}

// answer answers a pending admission prompt.
func (m *Model) answer(d layer.Decision) {
	if m.prompt == nil {
		return
	}
	m.prompt.reply <- d // buffered: never blocks
	m.prompt = nil
}

// send starts a turn with the input line.
func (m *Model) send() tea.Cmd {
	text := strings.TrimSpace(m.input)
	if text == "" || m.busy || m.session == nil {
		return nil
	}
	m.input, m.errText = "", ""
	m.transcript = append(m.transcript, entry{role: chat.User, text: text})
	m.open, m.busy = false, true
	ctx, cancel := context.WithCancel(m.ctx)
	m.cancelTurn = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		var err error
		for chunk, e := range m.session.SendStream(ctx, text) {
			if e != nil {
				err = e
				break
			}
			if !m.post(m.ctx, chunkMsg(chunk)) {
				return
			}
		}
		m.post(m.ctx, turnDoneMsg{err: err})
	}()
	return nil
}

// endTurn shows the conversation as the session kept it: completed user
// and assistant messages only, so an unfinished answer disappears with a
// failure (R16.2). The application is idle again, which clears the status
// line (R17.2).
func (m *Model) endTurn(err error) {
	m.busy, m.open, m.prompt = false, false, nil
	if m.cancelTurn != nil {
		m.cancelTurn()
		m.cancelTurn = nil
	}
	m.activity(broker.ActivityIdle)
	if m.session != nil {
		m.transcript = transcriptOf(m.session.Messages())
	}
	m.errText = ""
	if err != nil {
		m.errText = errorText(err)
	}
}

// transcriptOf returns the user and assistant messages of a conversation
// that have content.
func transcriptOf(msgs []chat.Message) []entry {
	var out []entry
	for _, msg := range msgs {
		if (msg.Role == chat.User || msg.Role == chat.Assistant) && msg.Content != "" {
			out = append(out, entry{role: msg.Role, text: msg.Content})
		}
	}
	return out
}

// errorText describes the failure of a turn.
func errorText(err error) string {
	if errors.Is(err, context.Canceled) {
		return "turn cancelled; the conversation keeps your message"
	}
	return "turn failed: " + err.Error()
}

// StatusLine returns the text of the transient status line: the admission
// question while one is pending, otherwise the broker status with a retry's
// wait counted down to the last tick, or "" when there is none.
func (m *Model) StatusLine() string {
	if m.prompt != nil {
		return "LLM request failed (" + m.prompt.failure + "); " + promptQuestion
	}
	return m.status.Live(m.now.Sub(m.statusAt))
}

// Transcript returns the transcript as "role: text" lines, one per entry.
func (m *Model) Transcript() []string {
	out := make([]string, 0, len(m.transcript))
	for _, e := range m.transcript {
		out = append(out, string(e.role)+": "+e.text)
	}
	return out
}

// Input returns the text of the input line.
func (m *Model) Input() string { return m.input }

// Styles of the view (plain SGR sequences).
const (
	sgrReset  = "\x1b[0m"
	sgrDim    = "\x1b[2m"
	sgrBold   = "\x1b[1m"
	sgrYellow = "\x1b[33m"
	sgrRed    = "\x1b[31m"
	sgrCyan   = "\x1b[36m"
)

// View renders the header, the transcript (its last lines that fit), the
// status line, the input line and a help line.
func (m *Model) View() tea.View {
	width := m.width
	if width <= 0 {
		width = 80
	}
	var lines []string
	for _, e := range m.transcript {
		label, style := "you: ", sgrBold
		if e.role == chat.Assistant {
			label, style = "assistant: ", sgrCyan
		}
		wrapped := ansi.Wrap(label+e.text, width, "")
		for i, l := range strings.Split(wrapped, "\n") {
			if i == 0 && strings.HasPrefix(l, label) {
				l = style + label + sgrReset + l[len(label):]
			}
			lines = append(lines, l)
		}
	}
	if m.height > 0 {
		room := max(m.height-5, 0)
		if len(lines) > room {
			lines = lines[len(lines)-room:]
		}
		for len(lines) < room {
			lines = append(lines, "")
		}
	}
	rule := sgrDim + strings.Repeat("─", width) + sgrReset
	var b strings.Builder
	b.WriteString(sgrBold + ansi.Truncate("recourse chat · "+m.title, width, "…") + sgrReset + "\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	b.WriteString(rule + "\n")
	if s := m.StatusLine(); s != "" {
		b.WriteString(sgrYellow + ansi.Truncate(s, width, "…") + sgrReset)
	}
	b.WriteString("\n")
	b.WriteString(ansi.TruncateLeft("> "+m.input+"█", max(ansi.StringWidth(m.input)+3-width, 0), "…") + "\n")
	switch {
	case m.errText != "":
		b.WriteString(sgrRed + ansi.Truncate(m.errText, width, "…") + sgrReset)
	case m.busy:
		b.WriteString(sgrDim + "waiting for the model · esc cancels the turn · ctrl+c quits" + sgrReset)
	default:
		b.WriteString(sgrDim + "enter sends · ctrl+c quits" + sgrReset)
	}
	v := tea.NewView(b.String())
	v.AltScreen = true
	return v
}
