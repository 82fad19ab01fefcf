package main

import (
	"fmt"
	"io"
	"strconv"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// sharingJSON is what sharing the servers saves, in "status --json"
// (SharingStatus).
type sharingJSON struct {
	Apps                 int32 `json:"apps"`
	Hosts                int32 `json:"hosts"`
	Processes            int32 `json:"processes"`
	RemoteServers        int32 `json:"remote_servers"`
	RSSBytes             int64 `json:"rss_bytes"`
	PSSBytes             int64 `json:"pss_bytes"`
	ProcessesWithoutMcpd int32 `json:"processes_without_mcpd"`
	RSSBytesWithoutMcpd  int64 `json:"rss_bytes_without_mcpd"`
	PSSBytesWithoutMcpd  int64 `json:"pss_bytes_without_mcpd"`
}

func toSharingJSON(s *mcpdv1.SharingStatus) sharingJSON {
	return sharingJSON{
		Apps:                 s.GetApps(),
		Hosts:                s.GetHosts(),
		Processes:            s.GetProcesses(),
		RemoteServers:        s.GetRemoteServers(),
		RSSBytes:             s.GetRssBytes(),
		PSSBytes:             s.GetPssBytes(),
		ProcessesWithoutMcpd: s.GetProcessesWithoutMcpd(),
		RSSBytesWithoutMcpd:  s.GetRssBytesWithoutMcpd(),
		PSSBytesWithoutMcpd:  s.GetPssBytesWithoutMcpd(),
	}
}

// printSharing prints the sharing line: the apps, the processes mcpd runs
// for them and what they would run without mcpd. Memory is the PSS when
// the daemon could read it, else the RSS. Nothing when no app used a
// server and none runs.
func printSharing(w io.Writer, s *mcpdv1.SharingStatus) {
	if s.GetApps() == 0 && s.GetProcesses() == 0 {
		return
	}
	mem, without := s.GetPssBytes(), s.GetPssBytesWithoutMcpd()
	if mem == 0 {
		mem, without = s.GetRssBytes(), s.GetRssBytesWithoutMcpd()
	}
	procs := count(s.GetProcesses(), "server process", "server processes")
	if mem > 0 {
		procs += " (" + mebibytes(mem) + ")"
	}
	var line string
	if s.GetApps() == 0 {
		// Autostart servers run before any app comes.
		line = "sharing: no app yet; " + procs + " running"
	} else {
		line = "sharing: " + count(s.GetApps(), "app", "apps")
		if h := s.GetHosts(); h > 0 {
			line += " (" + count(h, "host", "hosts") + ")"
		}
		verb := " use "
		if s.GetApps() == 1 {
			verb = " uses "
		}
		line += verb + procs
	}
	if r := s.GetRemoteServers(); r > 0 {
		line += " and " + count(r, "remote server", "remote servers")
	}
	line += "; without mcpd: " + count(s.GetProcessesWithoutMcpd(), "process", "processes")
	if without > 0 {
		line += " (~" + mebibytes(without) + ")"
	}
	fmt.Fprintln(w, line)
}

// count is n with the singular or plural noun.
func count(n int32, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(int(n)) + " " + many
}

// mebibytes is b in MiB, with one decimal under 10 MiB.
func mebibytes(b int64) string {
	m := float64(b) / (1 << 20)
	if m < 10 {
		return strconv.FormatFloat(m, 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(m, 'f', 0, 64) + " MiB"
}
