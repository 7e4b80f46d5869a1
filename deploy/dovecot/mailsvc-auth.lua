-- Dovecot Lua passdb: asks mailsvc's authentication hook whether a password is
-- right (the primary password unless the account requires app passwords, or an
-- active app password). Installed as /etc/dovecot/mailsvc-auth.lua; see README.md.
--
-- Protocol, one line each way per request, on a connection each auth-worker
-- keeps (and makes again when the hook closed it):
--   AUTH\t<protocol>\t<remote_ip>\t<hex(user)>\t<hex(password)>\tuserdb\n
--   OK\t<hex(canonical user)>[\t<hex(name=value)>…]\n | FAIL\n | ERROR\t<reason>\n
-- The name=value fields after OK are the account's userdb fields (what the SQL
-- userdb's user_query returns: user, and quota_rule with a quota); they are
-- returned as userdb_<name>, so the prefetch userdb answers the login's userdb
-- lookup and Dovecot skips the SQL userdb. A hook from before the prefetch
-- userdb refuses the `userdb` field (ERROR malformed request): the request is
-- then sent again without it and the SQL userdb answers as before.
--
-- Any failure to get an answer (socket missing, refused, slow, garbled, ERROR)
-- is an internal failure, so that `result_internalfail = continue` hands the
-- login to the SQL passdb, which knows primary passwords only.

local socket = require("socket")
local unix = require("socket.unix")

-- Dovecot 2.3 refuses unknown passdb args (only file=, blocking=, cache_key=,
-- scheme=), so the path comes from the environment, set in dovecot.conf with
-- `import_environment = $import_environment MAILSVC_AUTH_HOOK_SOCKET=/path`.
local hook_socket = os.getenv("MAILSVC_AUTH_HOOK_SOCKET") or "/run/mailsvc/auth-hook.sock"
local TIMEOUT_SECONDS = 3

-- Dovecot versions that pass the remaining passdb args to the script call this;
-- `socket=/path` there overrides the environment.
function auth_passdb_init(args)
  if type(args) == "table" and type(args.socket) == "string" and args.socket ~= "" then
    hook_socket = args.socket
  end
end

local function hex(s)
  return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

local function unhex(h)
  if h == nil or h == "" or #h % 2 ~= 0 or h:find("[^0-9a-fA-F]") then return nil end
  return (h:gsub("..", function(pair) return string.char(tonumber(pair, 16)) end))
end

-- Protocol and address come from Dovecot, but a tab or newline in either would
-- break the line format, so they are dropped rather than trusted.
local function field(s)
  return (tostring(s or ""):gsub("[\t\r\n]", ""))
end

-- Each auth-worker process keeps one connection to the hook and sends every
-- request on it (one line, one answer line), instead of a connect per login.
local conn = nil

local function drop()
  if conn then conn:close() end
  conn = nil
end

local function connect(remaining)
  local c, err = (unix.stream or unix)()
  if not c then return nil, "socket: " .. tostring(err) end
  c:settimeout(remaining())
  local ok
  ok, err = c:connect(hook_socket)
  if not ok then
    c:close()
    return nil, "connect " .. hook_socket .. ": " .. tostring(err)
  end
  return c
end

-- One request on the kept connection; nil, a reason and whether the
-- connection was an old one that the hook may have closed meanwhile.
local function exchange(line, remaining)
  local reused = conn ~= nil
  if not conn then
    local c, err = connect(remaining)
    if not c then return nil, err, false end
    conn = c
  end
  conn:settimeout(remaining())
  local ok, err = conn:send(line)
  if not ok then
    drop()
    return nil, "send: " .. tostring(err), reused
  end
  conn:settimeout(remaining())
  local answer
  answer, err = conn:receive("*l")
  if not answer then
    drop()
    return nil, "receive: " .. tostring(err), reused and err == "closed"
  end
  return answer
end

-- One request, one answer line; nil and a reason on any socket problem. A kept
-- connection the hook closed while it was idle (it closes idle ones after 30 s)
-- fails before any answer was made: the request goes once more on a new one.
local function ask_hook(line)
  local deadline = socket.gettime() + TIMEOUT_SECONDS
  local function remaining()
    return math.max(deadline - socket.gettime(), 0.001)
  end
  local answer, err, retry = exchange(line, remaining)
  if not answer and retry then
    answer, err = exchange(line, remaining)
  end
  return answer, err
end

-- The userdb fields the hook may set, each with the shape its value must have.
-- Nothing else passes: uid, gid, home, mail and the rest come from the userdb
-- blocks' default_fields, never from the hook (a service that could name them
-- could point a login at another user's files). `user` passes only as the
-- canonical name the answer began with.
local USERDB_ALLOWED = {
  quota_rule = "^%*:bytes=%d+$",
}

-- The userdb_ fields of an OK answer's `\t<hex(name=value)>` list, allowed ones
-- only; nil if one is garbled.
local function userdb_fields(list, fields)
  local canonical = fields.user
  if (list:gsub("\t%x+", "")) ~= "" then return nil end
  for item in list:gmatch("\t([^\t]*)") do
    local pair = unhex(item)
    local name, value = (pair or ""):match("^([a-z_]+)=(.*)$")
    if not name or value:find("[%c]") then return nil end
    local shape = USERDB_ALLOWED[name]
    if (name == "user" and value == canonical) or (shape and value:match(shape)) then
      fields["userdb_" .. name] = value
    end
  end
  return fields
end

function auth_password_verify(req, pass)
  local request = table.concat({
    "AUTH", field(req.service), field(req.remote_ip), hex(req.user or ""), hex(pass or ""),
  }, "\t")
  local answer, err = ask_hook(request .. "\tuserdb\n")
  if answer == "ERROR\tmalformed request" then
    answer, err = ask_hook(request .. "\n")
  end
  if not answer then
    return dovecot.auth.PASSDB_RESULT_INTERNAL_FAILURE, "mailsvc auth hook unavailable: " .. err
  end
  if answer == "FAIL" then
    return dovecot.auth.PASSDB_RESULT_PASSWORD_MISMATCH, "mailsvc auth hook: wrong credentials"
  end
  local canonical_hex, list = answer:match("^OK\t(%x+)(.*)$")
  if canonical_hex then
    local canonical = unhex(canonical_hex)
    -- `user` renames the login to the account's canonical address, so the
    -- userdb lookup, mail_location and doveadm all see one name.
    local fields = canonical and not canonical:find("[%c%s]") and userdb_fields(list, { user = canonical })
    if fields then
      return dovecot.auth.PASSDB_RESULT_OK, fields
    end
  end
  local reason = answer:match("^ERROR\t(.*)$")
  if reason then
    return dovecot.auth.PASSDB_RESULT_INTERNAL_FAILURE, "mailsvc auth hook error: " .. field(reason)
  end
  return dovecot.auth.PASSDB_RESULT_INTERNAL_FAILURE, "mailsvc auth hook: unexpected answer"
end
