package subscriptions

import "strings"

// A stream asks for the status notifications of one task of a 2026-07-28
// server by watching the task's URI, TaskURI(server, id): a modern child
// sends notifications/tasks/status only for the task ids its listen's
// filter names (taskIds). A task URI is counted, merged and updated as a
// resource URI is, but it is watched only on its own server, goes into the
// filter's taskIds instead of resourceSubscriptions, and is never sent as
// resources/subscribe: a legacy child sends the statuses of all its tasks,
// so its ack holds the task URIs as they are. The statuses arrive as
// KindTaskStatus events, which a stream gets with Watch.TaskStatus.

// taskScheme starts a task URI.
const taskScheme = "mcpd-task:"

// TaskURI is the URI a stream watches for the statuses of server's task id.
func TaskURI(server, id string) string { return taskScheme + server + "/" + id }

// taskOf splits a task URI; ok is false for any other URI. Server names
// hold no '/'.
func taskOf(uri string) (server, id string, ok bool) {
	rest, ok := strings.CutPrefix(uri, taskScheme)
	if !ok {
		return "", "", false
	}
	server, id, ok = strings.Cut(rest, "/")
	return server, id, ok && server != "" && id != ""
}

// splitTasks splits sorted uris into the resource URIs and the task URIs,
// both sorted.
func splitTasks(uris []string) (resources, tasks []string) {
	for _, u := range uris {
		if _, _, ok := taskOf(u); ok {
			tasks = append(tasks, u)
		} else {
			resources = append(resources, u)
		}
	}
	if len(tasks) == 0 {
		return uris, nil
	}
	return resources, tasks
}

// IsTaskURI reports whether uri is a task URI (TaskURI): not a resource,
// so a profile's resource rules do not apply to it.
func IsTaskURI(uri string) bool {
	_, _, ok := taskOf(uri)
	return ok
}
