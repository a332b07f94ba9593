package ctl

// tooManyBody is the reply to a connection over [supervisor]
// max_connections: the client's transport turns it into a ServerError with
// code "unavailable".
const tooManyBody = `{"error":"too many control connections: the supervisor's limit ([supervisor] max_connections) is reached; try again","code":"unavailable"}` + "\n"
