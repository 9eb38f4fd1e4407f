package submission

import (
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// loginServer is the server side of AUTH LOGIN (draft-murchison-sasl-login):
// "Username:" then "Password:", each answered in base64. go-sasl has only
// the client side.
type loginServer struct {
	check    func(password string) error
	step     int
	username string
}

func newLoginServer(check func(string) error) sasl.Server { return &loginServer{check: check} }

func (s *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch s.step {
	case 0:
		s.step = 1
		if response != nil { // an initial response is the user name
			s.username = string(response)
			s.step = 2
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 1:
		s.username = string(response)
		s.step = 2
		return []byte("Password:"), false, nil
	case 2:
		s.step = 3
		return nil, true, s.check(string(response))
	}
	return nil, true, smtp.ErrAuthFailed
}
