package fakemcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The server: one fake process's state, its start-up (the mode's flags,
// the knobs read from the environment and the start-time misbehaviours) and
// its stdin read loop.

// server is one fake process.
type server struct {
	flags    map[string]bool
	versions []string
	ttl      int64
	listWait time.Duration  // EnvListDelay
	info     map[string]any // serverInfo: name from EnvName
	out      io.Writer
	errw     io.Writer

	outMu sync.Mutex // guards writes to out
	// fanMu orders listens and the notifications fanned out to them: a
	// listen is registered and acknowledged under the write lock, a change
	// is fanned out (the listens read and every copy written) under the
	// read lock. So nothing is sent on a listen before its acknowledgement
	// ("nothing may be sent on that subscription before it"), and a change
	// reaches every listen acknowledged before it. (The spec allows a
	// server to interleave a change sent on older listens with a newer
	// listen's acknowledgement; mcpd copes with that too, see
	// subscriptions/cutover.go, but then repeated changes of one resource
	// may reach apps as one notice, which tests counting notices cannot
	// tell from a loss.)
	fanMu sync.RWMutex
	errMu sync.Mutex // guards writes to errw

	mu            sync.Mutex // guards the fields below
	initialized   bool
	counts        map[string]int
	cancelled     []json.RawMessage
	cancelReasons []string                         // of the notifications/cancelled in cancelled
	inflight      map[string]context.CancelFunc    // request id → cancel
	nextID        int64                            // id of the next server→client request
	seq           int64                            // requests read so far
	waiting       map[string]chan *jsonrpc.Message // server→client id → answer
	listens       map[string]json.RawMessage       // listen id → filter
	barriers      map[int]*barrier                 // outoforder groups by size
	added         []string                         // tools added by addtool (addtool.go)
	held          []chan struct{}                  // held progress calls, closed by release
	tasks         map[string]*fakeTask             // by id (tasks.go)
	suiteTasks    map[string]*suiteTask            // by id (tasksuite.go)
	suiteSeq      int                              // suite tasks created so far
	// stall is set by a stallstdin call, read by the reader after the
	// line: stop reading stdin for stallFor (zero: for good).
	stall    bool
	stallFor time.Duration
	// initRoots is the answer to the rootsatinit roots/list, as tool
	// roots reports it.
	initRoots string
}

func run(mode string, in io.Reader, out, errw io.Writer) int {
	s, code := newServer(mode, out, errw)
	if s == nil {
		return code
	}
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.handleLine(line)
		}
		if err != nil {
			break
		}
		s.waitStall()
	}
	s.logf("fakemcp: stdin closed")
	if s.flags["ignorestdin"] {
		select {} // until a signal
	}
	return 0
}

// newServer sets up the fake of mode writing to out, as it starts: nil and
// the exit status when it must not run (crashonstart).
func newServer(mode string, out, errw io.Writer) (*server, int) {
	s := &server{
		flags:    map[string]bool{},
		out:      out,
		errw:     errw,
		counts:   map[string]int{},
		inflight: map[string]context.CancelFunc{},
		waiting:  map[string]chan *jsonrpc.Message{},
		listens:  map[string]json.RawMessage{},
		barriers: map[int]*barrier{},
		ttl:      DefaultTTL,
		info:     map[string]any{"name": envOr(EnvName, "fakemcp"), "version": "1.0.0"},
	}
	for _, f := range strings.Split(mode, ",") {
		s.flags[strings.TrimSpace(f)] = true
	}
	if !s.flags["modern"] && !s.flags["legacy"] && !s.flags["dual"] {
		if s.flags["silentprobe"] || s.flags["exitonprobe"] {
			s.flags["legacy"] = true
		} else {
			s.flags["dual"] = true
		}
	}
	s.versions = strings.Split(envOr(EnvVersions, DefaultVersions), ",")
	if v, err := strconv.ParseInt(os.Getenv(EnvTTL), 10, 64); err == nil {
		s.ttl = v
	}
	if v, err := strconv.ParseInt(os.Getenv(EnvListDelay), 10, 64); err == nil {
		s.listWait = time.Duration(v) * time.Millisecond
	}

	if v, err := strconv.ParseInt(os.Getenv(EnvStartDelay), 10, 64); err == nil {
		time.Sleep(time.Duration(v) * time.Millisecond)
	}
	if s.flags["crashonstart"] || fileExists(os.Getenv(EnvCrashWhile)) {
		fmt.Fprintln(errw, "fakemcp: crash on start")
		return nil, exitCrashOnStart
	}
	if s.flags["ignoreterm"] {
		signal.Ignore(syscall.SIGTERM)
	}
	if s.flags["garbage"] {
		size := DefaultOversize
		if v, err := strconv.Atoi(os.Getenv(EnvOversize)); err == nil {
			size = v
		}
		s.writeRaw([]byte("fakemcp banner: starting up (not JSON)\n"))
		s.writeRaw([]byte("[1,2,3]\n\"a string\"\n42\n\n"))
		s.writeRaw(append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), size)...), "\"}\n"...))
	}
	s.logf("fakemcp: started mode=%s", mode)
	if line := os.Getenv(EnvStderr); line != "" {
		s.errLine(line)
	}
	return s, 0
}
