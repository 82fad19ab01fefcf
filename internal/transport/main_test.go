package transport

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

// childEnvVar names the fake-server behaviour when the test binary is
// re-executed as a child.
const childEnvVar = "TRANSPORT_TEST_CHILD"

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnvVar); name != "" {
		os.Exit(runChild(name))
	}
	goleak.VerifyTestMain(m)
}

// Fixed stdout of the "mixed" child, read with MaxLineSize mixedMax.
const mixedMax = 100_000

var (
	mixedLong = `{"long":"` + strings.Repeat("a", 90_000) + `"}`  // > bufio buffer, accepted
	mixedHuge = `{"huge":"` + strings.Repeat("b", 300_000) + `"}` // oversize, long path
	// mixedEdge is exactly mixedMax bytes: accepted even with "\r\n".
	mixedEdge = `{"edge":"` + strings.Repeat("c", mixedMax-11) + `"}`
	// mixedOver is one byte too long.
	mixedOver = `{"over":"` + strings.Repeat("d", mixedMax-10) + `"}`
)

// Fixed stdout of the "oversize" child, read with MaxLineSize oversizeMax.
const (
	oversizeMax      = 4096
	oversizeLongHead = `{"jsonrpc":"2.0","id":1,"result":{"text":"`
)

var (
	// oversizeLong is longer than the bufio buffer: discarded on the long
	// path. It is the first line and ends with "\r\n" split across two
	// reads: its "\r" is the last byte of the second buffer.
	oversizeLong = oversizeLongHead + strings.Repeat("x", 2*stdoutBufferSize-1-len(oversizeLongHead)-3) + `"}}`
	// oversizeShort fits the bufio buffer; it has "\r\n" as line ending.
	oversizeShort = `  {"id":2,"pad":"` + strings.Repeat("y", 5000) + `"}`
	// oversizeEdge is exactly oversizeMax bytes: accepted.
	oversizeEdge = `{"edge":"` + strings.Repeat("e", oversizeMax-11) + `"}`
	// oversizeLast is the last line, without a newline.
	oversizeLast = `{"id":3,"pad":"` + strings.Repeat("z", 70_000) + `"}`
)

var oversizeStdout = oversizeLong + "\r\n" + `{"n":1}` + "\n" + oversizeShort + "\r\n" +
	oversizeEdge + "\n" + `{"n":2}` + "\n" + oversizeLast

var mixedStdout = strings.Join([]string{
	`{"n":1}`,
	`hello, this is a banner on stdout`,
	``,
	" \t ",
	`[1,2,3]`,
	`{"n":2}` + "\r",
	`{broken`,
	mixedLong,
	mixedHuge,
	`  {"n":3}  `,
	mixedEdge + "\r",
	mixedOver,
	`"just a string"`,
	`{"n":4}`,
	`{"n":5}`, // last line, no newline
}, "\n")

// runChild is the fake MCP server; it returns the exit status.
func runChild(name string) int {
	out := bufio.NewWriter(os.Stdout)
	say := func(s string) {
		out.WriteString(s + "\n")
		out.Flush()
	}
	sleepForever := func() {
		for {
			time.Sleep(time.Hour)
		}
	}
	readStdinToEOF := func() {
		r := bufio.NewReader(os.Stdin)
		for {
			if _, err := r.ReadSlice('\n'); err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return
			}
		}
	}
	switch name {
	case "echo":
		r := bufio.NewReaderSize(os.Stdin, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				out.Write(line)
				out.Flush()
			}
			if err != nil {
				return 0
			}
		}
	case "mixed":
		out.WriteString(mixedStdout)
		out.Flush()
		return 0
	case "oversize":
		out.WriteString(oversizeStdout)
		out.Flush()
		return 0
	case "mixed-small":
		out.WriteString("{\"a\":1}\n{\"toolong\":\"xxxxxxxxxx\"}\n{\"b\":2}\n")
		out.Flush()
		return 0
	case "crash":
		fmt.Fprintln(os.Stderr, "boom: cannot start")
		return 3
	case "ignore-stdin":
		say(`{"ready":true}`)
		readStdinToEOF()
		fmt.Fprintln(os.Stderr, "stdin eof, staying alive")
		sleepForever()
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		say(`{"ready":true}`)
		readStdinToEOF()
		sleepForever()
	case "sleep":
		sleepForever()
	case "echo-after-usr1":
		// Reads nothing until SIGUSR1, then echoes stdin like "echo".
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		say(`{"ready":true}`)
		<-usr1
		r := bufio.NewReaderSize(os.Stdin, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				out.Write(line)
				out.Flush()
			}
			if err != nil {
				return 0
			}
		}
	case "close-stdin":
		os.Stdin.Close()
		say(`{"ready":true}`)
		sleepForever()
	case "grandchild", "grandchild-exit", "grandchild-escape":
		exe, err := os.Executable()
		if err != nil {
			return 10
		}
		gc := exec.Command(exe)
		gc.Env = append(os.Environ(), childEnvVar+"=sleep")
		if name == "grandchild-escape" {
			// Leaves the process group, so the group kill cannot reach it.
			gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		// The grandchild holds our stdout and stderr: Done must not wait
		// for it.
		gc.Stdout, gc.Stderr = os.Stdout, os.Stderr
		if err := gc.Start(); err != nil {
			return 11
		}
		say(`{"grandchild":` + strconv.Itoa(gc.Process.Pid) + `}`)
		switch name {
		case "grandchild-escape":
			return 1
		case "grandchild-exit":
			// Exits once told to: the group kill that follows must not
			// come before the test has seen the grandchild alive.
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
			return 1
		}
		readStdinToEOF()
		return 0 // leaves the grandchild behind
	case "env":
		b, _ := json.Marshal(map[string][]string{"env": os.Environ()})
		say(string(b))
		return 0
	case "pwd":
		wd, _ := os.Getwd()
		b, _ := json.Marshal(map[string]string{"wd": wd})
		say(string(b))
		return 0
	case "stderr-lines":
		os.Stderr.WriteString("line1\r\nline2\n\n" + strings.Repeat("x", MaxStderrLine+5000) + "\nbad \xff utf8\ntail-no-newline")
		return 0
	case "stderr-many":
		var b strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		os.Stderr.WriteString(b.String())
		return 0
	case "stderr-flood":
		chunk := []byte(strings.Repeat("z", 1<<20))
		for range 100 {
			os.Stderr.Write(chunk)
		}
		os.Stderr.WriteString("\nend\n")
		say(`{"done":true}`)
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown child behaviour %q\n", name)
	return 99
}

// startChild starts the test binary as the child behaviour and makes sure it
// is dead when the test ends.
func startChild(t testing.TB, behaviour string, mod func(*Options)) *Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Name:    "fake-" + behaviour,
		Command: exe,
		// A -race child would otherwise sleep 1s at exit.
		Env:           append(os.Environ(), childEnvVar+"="+behaviour, "GORACE=atexit_sleep_ms=0"),
		ShutdownGrace: 5 * time.Second,
		Stderr:        NewRing(0, 0),
		Logger:        zaptest.NewLogger(t),
	}
	if mod != nil {
		mod(&opts)
	}
	p, err := Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		p.Kill()
		<-p.Done()
	})
	return p
}

// discardStdout reads the child's stdout until EOF in a goroutine owned by
// the test, so Done does not wait for a reader.
func discardStdout(t testing.TB, p *Process) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := p.ReadMessage(); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		p.Kill()
		<-done
	})
}

// readJSON reads one message and decodes it into v.
func readJSON(t testing.TB, p *Process, v any) {
	t.Helper()
	msg, err := p.ReadMessage()
	if err != nil {
		t.Fatalf("ReadMessage: %v", err)
	}
	if err := json.Unmarshal(msg, v); err != nil {
		t.Fatalf("decode %q: %v", msg, err)
	}
}

// waitStatus returns the wait status in an *exec.ExitError.
func waitStatus(t testing.TB, err error) syscall.WaitStatus {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("exit error = %v (%T), want *exec.ExitError", err, err)
	}
	return ee.Sys().(syscall.WaitStatus)
}

// procStart returns the start time of pid from /proc, to tell a reused pid
// from the original process.
func procStart(pid int) (state, start string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", "", fmt.Errorf("bad stat %q", s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", "", fmt.Errorf("bad stat %q", s)
	}
	return f[0], f[19], nil // field 3 (state) and field 22 (starttime)
}

// processGone reports whether the process pid that started at start is
// dead. kill(pid, 0) == ESRCH is the plain answer; a zombie (dead, waiting
// for an init that reaps lazily) or a reused pid also count as gone.
func processGone(pid int, start string) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	state, st, err := procStart(pid)
	return err != nil || state == "Z" || st != start
}

// waitGone polls (with a deadline) until the process is gone.
func waitGone(t testing.TB, pid int, start string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !processGone(pid, start) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readAll hands each message of p to each, in order, until stdout ends.
func readAll(t *testing.T, p *Process, each func(msg string)) {
	t.Helper()
	for {
		msg, err := p.ReadMessage()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("ReadMessage: %v", err)
		}
		each(string(msg))
	}
}
