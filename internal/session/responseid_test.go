package session

import "testing"

func TestResponseIDPrefix(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		want   string // "" means not found
	}{
		{"id first", `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"xxxx`, `5`},
		{"whole small response", `{"id":3,"result":{}}`, `3`},
		{"error response", ` { "id" : 7 , "error" : {"code":-32000,"message":"xxx`, `7`},
		{"string id", `{"id":"a-1","result":{"x`, `"a-1"`},
		{"object id with braces in a string", `{"id":{"a":"}"},"result":[`, `{"a":"}"}`},
		{"id after a whole result", `{"jsonrpc":"2.0","result":{"a":1},"id":9,"pad":"xxx`, `9`},
		{"result before id", `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"xxx`, ``},
		{"id nested in result before id", `{"jsonrpc":"2.0","result":{"id":3,"text":"xxx`, ``},
		{"id nested in params of a notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"id":12,"data":"xxx`, ``},
		{"id nested in params before method", `{"jsonrpc":"2.0","params":{"id":12,"data":"xxx`, ``},
		{"request of the child", `{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"messages":[`, ``},
		{"request with method after params", `{"jsonrpc":"2.0","id":4,"params":{"x":"yyy`, ``},
		{"progress notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpd-1","x":"`, ``},
		{"id without result", `{"jsonrpc":"2.0","id":4}`, ``},
		{"id number cut off", `{"jsonrpc":"2.0","id":12`, ``},
		{"id string cut off", `{"jsonrpc":"2.0","id":"ab`, ``},
		{"key cut off", `{"jsonrpc":"2.0","i`, ``},
		{"second id cut off", `{"id":1,"result":{},"id":2`, ``},
		{"second id replaces the first", `{"id":1,"id":2,"result":{"x`, `2`},
		{"id in another case", `{"ID":5,"result":{"xx`, ``},
		{"result in another case", `{"id":5,"Result":{"xx`, ``},
		{"escaped key", `{"\u0069d":5,"result":{"xx`, ``},
		{"not an object", `[{"id":5,"result":{`, ``},
		{"banner", `hello "id":5,"result"`, ``},
		{"empty", ``, ``},
		{"whitespace", "  \t", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := responseIDPrefix([]byte(tt.prefix))
			got := ""
			if ok {
				got = string(id)
			}
			if got != tt.want {
				t.Errorf("responseIDPrefix(%q) = %q, %v; want %q", tt.prefix, id, ok, tt.want)
			}
		})
	}
}
