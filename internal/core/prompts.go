package core

import (
	"context"
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// PromptGet is a prompts/get in parts, as the gRPC door's GetPromptRequest
// carries it: its JSON parts (the arguments, the answers to an
// input_required result) are text, empty when absent, and errors name
// them as GetPromptRequest does.
type PromptGet struct {
	Server, Name              string
	Arguments, InputResponses []byte
	RequestState              string
	Options                   service.Options
}

// GetPrompt validates a prompts/get and makes it.
func (s *Service) GetPrompt(ctx context.Context, p PromptGet) (Answer, error) {
	if p.Server == "" {
		return Answer{}, codeError(service.InvalidArgument, "server name required")
	}
	if p.Name == "" {
		return Answer{}, codeError(service.InvalidArgument, "prompt name required")
	}
	args, err := JSONObject("arguments_json", p.Arguments)
	if err != nil {
		return Answer{}, err
	}
	if args != nil {
		// prompts/get params: "arguments?: {string: string}".
		var m map[string]string
		if err := json.Unmarshal(args, &m); err != nil {
			return Answer{}, codeError(service.InvalidArgument, "invalid arguments_json: values must be strings")
		}
	}
	inputResponses, err := JSONObject("input_responses_json", p.InputResponses)
	if err != nil {
		return Answer{}, err
	}
	params, err := json.Marshal(struct {
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments,omitempty"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
		RequestState   string          `json:"requestState,omitempty"`
	}{p.Name, args, inputResponses, p.RequestState})
	if err != nil {
		return Answer{}, codeError(service.Internal, "encode prompts/get params: %v", err)
	}
	return s.call(ctx, p.Server, "prompts/get", params, p.Options)
}

// Complete validates a completion/complete, whose params (text, named
// params_json in errors) are required, and makes it.
func (s *Service) Complete(ctx context.Context, server string, params []byte, o service.Options) (Answer, error) {
	if server == "" {
		return Answer{}, codeError(service.InvalidArgument, "server name required")
	}
	p, err := JSONObject("params_json", params)
	if err != nil {
		return Answer{}, err
	}
	if p == nil {
		// completion/complete requires "ref" and "argument".
		return Answer{}, codeError(service.InvalidArgument, "params_json required")
	}
	return s.call(ctx, server, "completion/complete", p, o)
}
