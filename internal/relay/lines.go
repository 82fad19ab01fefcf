package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// replayPrefix starts the ids of the requests replayed to the fallback,
// whose answers the host never sees.
const replayPrefix = "mcpdctl-replay-"

// replayInitWait bounds the wait for the answer to the replayed initialize
// before the rest is replayed.
const replayInitWait = 10 * time.Second

// maxAccumulated is the largest line buffer kept for the next line.
const maxAccumulated = 1 << 20

// tracker follows the host's lines on their way to mcpd, by their
// envelope only: the requests in flight (to answer them if the connection
// breaks) and what a new bridge must be told to go on with the session: a
// legacy host's initialize and notifications/initialized, its
// logging/setLevel and the resources it subscribed to, and a modern host's
// subscriptions/listen requests, which the new bridge takes on (the host
// keeps its subscription ids).
type tracker struct {
	max  int    // --max-line-size: a longer line is not kept
	acc  []byte // the current line's start, when it spans chunks
	over bool   // the current line is longer than max

	inflight    map[string]*sentID // the host's requests in flight, by id as written
	initialize  *jsonrpc.Message   // the session's initialize: mcpd refuses a second
	initID      string             // its id as written
	initialized bool               // notifications/initialized was sent
	setLevel    *jsonrpc.Message   // the last logging/setLevel
	subscribed  []string           // subscribed URIs, in order
	listens     map[string][]byte  // open subscriptions/listen lines, by id as written
}

// feed follows a chunk of the host's bytes.
func (t *tracker) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.keep(p)
			return
		}
		if len(t.acc) == 0 && !t.over {
			if i <= t.max { // a longer one mcpd answers itself, as too large
				t.line(p[:i])
			}
		} else {
			t.keep(p[:i])
			if !t.over {
				t.line(t.acc)
			}
			t.acc, t.over = t.acc[:0], false
			if cap(t.acc) > maxAccumulated {
				t.acc = nil
			}
		}
		p = p[i+1:]
	}
}

// keep adds p to the current line unless it grows past max.
func (t *tracker) keep(p []byte) {
	if t.over {
		return
	}
	if len(t.acc)+len(p) > t.max {
		t.acc, t.over = nil, true
		return
	}
	t.acc = append(t.acc, p...)
}

// between reports whether the host is between messages: no line half
// read, and no request awaiting its answer but open listens.
func (t *tracker) between() bool {
	if len(t.acc) > 0 || t.over {
		return false
	}
	for key := range t.inflight {
		if _, ok := t.listens[key]; !ok {
			return false
		}
	}
	return true
}

// partial is the start of the line stdin is in the middle of, a copy, or
// skip when it is an oversize line whose rest must be dropped.
func (t *tracker) partial() (start []byte, skip bool) {
	return bytes.Clone(t.acc), t.over
}

// line follows one whole line.
func (t *tracker) line(l []byte) {
	env, err := jsonrpc.DecodeEnvelope(l)
	if err != nil || env.Method == "" {
		return // mcpd answers what it cannot read; a response is the host's
	}
	if len(env.ID) == 0 || string(env.ID) == "null" {
		t.notification(env)
		return
	}
	if t.inflight == nil {
		t.inflight = map[string]*sentID{}
	}
	busy := t.inflight[string(env.ID)]
	if busy != nil {
		// mcpd refuses it (its id is in flight), and answers it: one
		// more answer to wait for, and nothing else to follow.
		busy.n++
		return
	}
	t.inflight[string(env.ID)] = &sentID{id: bytes.Clone(env.ID), n: 1}
	switch env.Method {
	case "initialize":
		if t.initialize != nil {
			return // refused by mcpd: the session keeps its first
		}
		t.initialize = &jsonrpc.Message{Method: env.Method, Params: bytes.Clone(env.Params)}
		t.initID, t.initialized = string(env.ID), false
	case "logging/setLevel":
		t.setLevel = &jsonrpc.Message{Method: env.Method, Params: bytes.Clone(env.Params)}
	case "subscriptions/listen":
		if t.listens == nil {
			t.listens = map[string][]byte{}
		}
		t.listens[string(env.ID)] = bytes.Clone(l)
	case "resources/subscribe", "resources/unsubscribe":
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(env.Params, &p) != nil || p.URI == "" {
			return
		}
		t.subscribe(p.URI, env.Method == "resources/subscribe")
	}
}

// notification follows one of the host's notifications.
func (t *tracker) notification(env jsonrpc.Envelope) {
	switch env.Method {
	case "notifications/initialized":
		t.initialized = true
	case "notifications/cancelled": // the bridge does not answer it then
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(env.Params, &p) == nil {
			t.answered(p.RequestID, false)
		}
	}
}

func (t *tracker) subscribe(uri string, on bool) {
	for i, u := range t.subscribed {
		if u == uri {
			if !on {
				t.subscribed = append(t.subscribed[:i], t.subscribed[i+1:]...)
			}
			return
		}
	}
	if on {
		t.subscribed = append(t.subscribed, uri)
	}
}

// sentID is a request id in flight and how many of the host's requests
// with it await their answer: more than one when the host reused an id in
// flight (mcpd refuses all but the first, and answers each).
type sentID struct {
	id json.RawMessage
	n  int
}

// answered forgets the request mcpd answered (or the host cancelled), once
// every request with its id was; failed says the answer is an error, which
// leaves the session without the initialize it answers.
func (t *tracker) answered(id []byte, failed bool) {
	key := string(id)
	if s := t.inflight[key]; s != nil && s.n > 1 {
		s.n--
		return
	}
	delete(t.inflight, key)
	delete(t.listens, key)
	if failed && key == t.initID && t.initialize != nil && !t.initialized {
		t.initialize, t.initID = nil, "" // the host may initialize again
	}
}

// failInFlight appends an error answer with msg to every request in
// flight but the open listens (replayed) and forgets them.
func (t *tracker) failInFlight(out []byte, msg string) []byte {
	for key, s := range t.inflight {
		if _, ok := t.listens[key]; ok {
			continue
		}
		m := &jsonrpc.Message{JSONRPC: jsonrpc.Version, ID: s.id, Error: jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", msg)}
		if b, err := jsonrpc.AppendMessage(out, m); err == nil {
			out = append(b, '\n')
		}
	}
	clear(t.inflight)
	return out
}

// replay is what a new bridge is fed before the rest of stdin: the
// host's initialize, then (once it is answered, which gate says)
// notifications/initialized, logging/setLevel and resources/subscribe,
// and the open subscriptions/listen requests as the host wrote them (the
// new bridge acknowledges each again, under the host's id).
func (t *tracker) replay() (io.Reader, *replayGate) {
	gate := &replayGate{initAnswered: make(chan struct{})}
	var first, rest []byte
	n := 0
	add := func(b []byte, m *jsonrpc.Message) []byte {
		m.JSONRPC = jsonrpc.Version
		if m.Method != "notifications/initialized" {
			n++
			m.ID = json.RawMessage(strconv.Quote(replayPrefix + strconv.Itoa(n)))
		}
		out, err := jsonrpc.AppendMessage(b, m)
		if err != nil {
			return b
		}
		return append(out, '\n')
	}
	if t.initialize != nil {
		first = add(nil, &jsonrpc.Message{Method: t.initialize.Method, Params: t.initialize.Params})
		gate.initID = []byte(strconv.Quote(replayPrefix + "1"))
	} else {
		close(gate.initAnswered)
	}
	if t.initialized {
		rest = add(rest, &jsonrpc.Message{Method: "notifications/initialized"})
	}
	if t.setLevel != nil {
		rest = add(rest, &jsonrpc.Message{Method: t.setLevel.Method, Params: t.setLevel.Params})
	}
	for _, u := range t.subscribed {
		p, _ := json.Marshal(map[string]string{"uri": u})
		rest = add(rest, &jsonrpc.Message{Method: "resources/subscribe", Params: p})
	}
	for _, key := range slices.Sorted(maps.Keys(t.listens)) {
		rest = append(append(rest, t.listens[key]...), '\n')
	}
	return io.MultiReader(bytes.NewReader(first), gate, bytes.NewReader(rest)), gate
}

// replayGate holds the replay back until the replayed initialize was
// answered (a bridge takes notifications/initialized only after it), for
// at most replayInitWait. As an io.Reader it is empty once open.
type replayGate struct {
	initID       []byte        // the replayed initialize's id; nil for none
	initAnswered chan struct{} // closed once it was answered
	once         sync.Once
}

func (g *replayGate) Read([]byte) (int, error) {
	t := time.NewTimer(replayInitWait)
	defer t.Stop()
	select {
	case <-g.initAnswered:
	case <-t.C:
	}
	return 0, io.EOF
}

// replayFilter is the fallback bridge's stdout: it drops the answers to
// the replayed requests. The bridge writes each message with one Write.
type replayFilter struct {
	w    io.Writer
	gate *replayGate
}

func (f *replayFilter) Write(p []byte) (int, error) {
	if id, _, _ := messageID(p); !f.gate.drop(id) {
		return f.w.Write(p)
	}
	return len(p), nil
}

// drop reports whether id is a replayed request's (its answer is not the
// host's), and opens the gate at the replayed initialize's answer.
func (g *replayGate) drop(id []byte) bool {
	if !bytes.HasPrefix(id, []byte(`"`+replayPrefix)) {
		return false
	}
	if bytes.Equal(id, g.initID) {
		g.once.Do(func() { close(g.initAnswered) })
	}
	return true
}

// messagePrefix is how mcpd's bridge starts every message with an id
// (jsonrpc.AppendMessage).
const messagePrefix = `{"jsonrpc":"2.0","id":`

// messageID is the id of a message the bridge wrote, or nil, whether it
// is a request (of the bridge to the host) rather than an answer, and
// whether it is an error answer; head is the message's start.
func messageID(head []byte) (id []byte, request, failed bool) {
	rest, ok := bytes.CutPrefix(head, []byte(messagePrefix))
	if !ok {
		return nil, false, false
	}
	end := jsonrpc.ValueEnd(rest, 0)
	if end < 0 {
		return nil, false, false
	}
	after := rest[end:]
	return rest[:end], bytes.HasPrefix(after, []byte(`,"method"`)), bytes.HasPrefix(after, []byte(`,"error"`))
}

// demux splits mcpd's output into the host's messages and the
// bridge's warnings (bridge.RelayWarning lines), printed on stderr; it sees
// the id of each answer go by. Whole messages are written on in runs as
// they come; the start of a message still coming is held back, however
// long, so that a connection that breaks within it (mcpd stopped) cuts
// nothing the host sees: the cut message is dropped, and the request it
// answers is answered by the break. (The message is held once either way:
// the host reads it whole.)
type demux struct {
	// drop, if set, reports whether an answer (by id) is to be dropped:
	// the answers to a session's replay when it returned to the relay.
	drop func(id []byte) bool

	mid  bool   // within a line
	warn bool   // the current line is a warning
	text []byte // the warning so far
	head []byte // the current message's start, up to headSize bytes
	hold []byte // the current message so far
}

// headSize is how much of a message's start is kept to find its id.
const headSize = 512

// maxWarning bounds a warning line.
const maxWarning = 16 << 10

// holdKeep is the largest hold buffer kept for the next message; a longer
// message's is let go.
const holdKeep = 64 << 10

// split handles one chunk of mcpd's output.
func (d *demux) split(p []byte, out io.Writer, warnf func(string, ...any), answered func(id []byte, failed bool)) {
	start := 0     // of the bytes not written out or held yet
	msgStart := -1 // where the current message began in p; -1: in an earlier chunk
	for i := 0; i < len(p); {
		if !d.mid {
			d.mid, d.warn, d.head, msgStart = true, p[i] == bridge.RelayWarning, d.head[:0], i
			if d.warn {
				write(out, p[start:i], warnf)
				i++ // the marker
			}
		}
		end := len(p)
		if nl := bytes.IndexByte(p[i:], '\n'); nl >= 0 {
			end = i + nl
		}
		if d.warn {
			d.text = append(d.text, p[i:min(end, i+max(0, maxWarning-len(d.text)))]...)
		} else if len(d.head) < headSize {
			d.head = append(d.head, p[i:min(end, i+headSize-len(d.head))]...)
		}
		if end == len(p) {
			break
		}
		dropped := false
		if !d.warn {
			if id, request, failed := messageID(d.head); id != nil && !request {
				if dropped = d.drop != nil && d.drop(id); !dropped {
					answered(id, failed)
				}
			}
		}
		switch {
		case d.warn:
			warnf("%s", d.text)
			d.text = d.text[:0]
			start = end + 1
		case dropped && len(d.hold) > 0:
			d.hold, start = d.hold[:0], end+1
		case dropped: // it began in p: what precedes it goes out
			write(out, p[start:msgStart], warnf)
			start = end + 1
		case len(d.hold) > 0: // its start came in earlier chunks: start is 0
			d.hold = append(d.hold, p[start:end+1]...)
			write(out, d.hold, warnf)
			d.hold, start = d.hold[:0], end+1
			if cap(d.hold) > holdKeep {
				d.hold = nil // a long message's buffer is not kept for the session
			}
		}
		d.mid = false
		i = end + 1
	}
	d.tail(p[start:], max(msgStart-start, 0), out, warnf)
}

// tail handles what is left of a chunk after split: rest, whose first
// whole bytes are complete lines, then (when within a message) that
// message's bytes so far, which are held back.
func (d *demux) tail(rest []byte, whole int, out io.Writer, warnf func(string, ...any)) {
	switch {
	case !d.mid:
		write(out, rest, warnf)
	case d.warn: // its text is kept; the lines before it are out
	default:
		write(out, rest[:whole], warnf)
		d.hold = append(d.hold, rest[whole:]...)
	}
}

// cut drops the message still coming when the output ends within it, and
// reports whether there was one.
func (d *demux) cut() bool {
	cut := d.mid && !d.warn
	d.hold, d.mid = nil, false
	return cut
}

// write writes p to the host, if any.
func write(out io.Writer, p []byte, warnf func(string, ...any)) {
	if len(p) == 0 {
		return
	}
	if _, err := out.Write(p); err != nil {
		warnf("bridge: write stdout: %v", err)
	}
}
