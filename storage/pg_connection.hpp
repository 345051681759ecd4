// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "storage/pg_link.hpp"

struct pg_result;
struct pg_cancel;

namespace comb::storage {

/// Statement parameters in text format; nothing is SQL NULL. Values travel beside the SQL text,
/// never inside it.
using pg_params = std::vector<std::optional<std::string>>;

/// How a statement travels: its plan, which parameters go in binary, and the rows' format.
struct pg_formats {
  /// As `pg_connection::exec`'s `generic_plan`.
  bool generic_plan = false;
  /// `binary_params[i]` true sends parameter i as raw bytes of its type's binary form; shorter
  /// leaves the rest in text format.
  std::vector<bool> binary_params;
  /// Every column of the rows comes in its type's binary form (pg_reply::binary_integer, and
  /// text and bytea as their bytes), so neither side formats nor parses numbers and hex.
  bool binary_rows = false;
};

/// The outcome of one statement: rows on success, an error text and SQLSTATE otherwise.
class pg_reply {
public:
  pg_reply() = default;

  /// True for a command or query that completed.
  [[nodiscard]] bool ok() const noexcept { return error_.empty(); }

  /// "" on success; otherwise the server's (or libpq's) message, one line.
  [[nodiscard]] const std::string& error() const noexcept { return error_; }

  /// Five-character SQLSTATE, "" when the failure came from libpq itself (e.g. a lost socket).
  [[nodiscard]] const std::string& sqlstate() const noexcept { return sqlstate_; }

  /// True when the failure is the connection's, not the statement's: retrying elsewhere may work.
  [[nodiscard]] bool connection_lost() const noexcept { return connection_lost_; }

  [[nodiscard]] int rows() const noexcept;
  [[nodiscard]] bool is_null(int row, int column) const noexcept;
  /// Text of a field (its bytes, in a binary-format reply); "" for NULL.
  [[nodiscard]] std::string_view text(int row, int column) const noexcept;
  /// A field of a binary-format reply: a big-endian integer of up to 8 bytes, read unsigned
  /// (an xid stays positive; an int8 keeps its sign). 0 when NULL.
  [[nodiscard]] std::int64_t binary_integer(int row, int column) const noexcept;
  /// A field parsed as an integer; 0 when NULL or not a number.
  [[nodiscard]] std::int64_t integer(int row, int column) const noexcept;
  /// Rows changed by an INSERT/UPDATE/DELETE (PQcmdTuples).
  [[nodiscard]] std::uint64_t affected_rows() const noexcept;

private:
  friend class pg_connection;

  struct deleter {
    void operator()(::pg_result* result) const noexcept;
  };

  std::unique_ptr<::pg_result, deleter> result_;
  std::string error_;
  std::string sqlstate_;
  bool connection_lost_ = false;
};

/// How hard to try when the server is unreachable.
struct pg_reconnect_policy {
  int attempts = 3;
  std::chrono::milliseconds first_backoff{50}; ///< doubled after each failed attempt
  /// Set on every (re)connect: statements running longer are cancelled by the server. 0: none.
  std::uint32_t statement_timeout_ms = 0;
  /// Set on every (re)connect: a statement waiting longer for a lock fails (55P03), so a lock
  /// held elsewhere (a psql session left open, a community's deletion) costs its requests an
  /// error within a bound rather than stall the writer that serves every community. 0: none.
  std::uint32_t lock_timeout_ms = 10000;
  /// Which server of the URL's hosts: a connection that writes must not settle on a standby
  /// during a failover; a reader takes one that refuses writes only when none takes them.
  server_choice servers = server_choice::writable;
  /// A session settled on a server that refuses writes (server_choice::writable_else_any) is
  /// closed after this, between statements, so the next tries a writable one again.
  std::chrono::milliseconds writable_recheck{30000};
};

/// A failed statement inside a transaction; the store that opened the transaction catches it
/// at its public boundary and rolls back.
struct statement_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `reply`, or statement_failed naming `step` with the database's error.
pg_reply must(pg_reply reply, const char* step);


/// One libpq connection. Not thread-safe, except `cancel()`, which any thread may call.
/// Connects lazily; when the connection is found broken (a failed connect, a lost socket, the
/// backend terminated), the next call reconnects, with bounded attempts and a short backoff.
/// A connection lost inside a transaction is not silently replaced: like Postgres after an
/// error, every further statement fails until the caller sends ROLLBACK (or COMMIT, which then
/// fails), so the rest of that transaction can never run in autocommit on a new connection.
/// No function throws.
class pg_connection {
public:
  explicit pg_connection(std::string conninfo, pg_reconnect_policy policy = {});
  ~pg_connection();

  pg_connection(const pg_connection&) = delete;
  pg_connection& operator=(const pg_connection&) = delete;

  /// Connects (or reconnects) unless already connected. Returns the error, if any.
  [[nodiscard]] std::optional<std::string> ensure_connected();

  /// Runs one parameterized statement (text format). Parameters are referenced as $1, $2, ...
  /// and cast in the SQL text where their type matters. A statement with parameters is
  /// prepared on its first use on a connection and executed by name afterwards, so Postgres
  /// parses and analyses each distinct text once per connection (at most 256 texts per
  /// connection are kept prepared; others are sent unprepared every time). `generic_plan`: run
  /// the prepared statement's generic plan, planned once per connection, instead of planning it
  /// anew for each set of values; only for SQL whose plan the values cannot change (the caller
  /// knows its shape).
  [[nodiscard]] pg_reply exec(std::string_view sql, const pg_params& params = {},
                              bool generic_plan = false);

  /// `exec` with some parameters in binary format: `binary[i]` true sends `params[i]` as raw
  /// bytes of the type's binary form (e.g. a pg_binary_array), with its length, so Postgres
  /// neither parses nor unescapes it. Shorter `binary` leaves the rest in text format.
  [[nodiscard]] pg_reply exec(std::string_view sql, const pg_params& params,
                              const std::vector<bool>& binary);

  /// `exec` with every choice of `formats`: the plan, binary parameters, binary rows. Every
  /// `exec` form comes here; a stale prepared statement is prepared and run again once.
  [[nodiscard]] pg_reply exec_with(std::string_view sql, const pg_params& params,
                                   const pg_formats& formats);

  /// One statement of exec_pipeline: as for `exec`, `binary[i]` true sends `params[i]` in
  /// binary format. `params` must outlive the call.
  struct pipelined {
    std::string_view sql;
    const pg_params* params = nullptr;
    std::vector<bool> binary;
    bool binary_rows = false; ///< as pg_formats::binary_rows
  };

  /// Runs `statements` in order in one round trip (libpq's pipeline mode) instead of one each,
  /// each prepared and executed as `exec` does (`generic_plan` for all of them). The server
  /// skips every statement after one that fails (their replies fail too). One reply per
  /// statement; a connection lost fails them all as `exec` reports it, but for the replies read
  /// up to an explicit COMMIT or ROLLBACK, which stand (a COMMIT read is made; what follows ran
  /// in a transaction the loss left unknown: the pipeline's implicit one commits at its end).
  [[nodiscard]] std::vector<pg_reply> exec_pipeline(const std::vector<pipelined>& statements,
                                                    bool generic_plan = false);

  /// Runs `COPY … FROM STDIN` (constant SQL, like exec_script's) and sends `data` as its whole
  /// input, in the format the statement names (e.g. a pg_copy_rows in FORMAT binary). Returns
  /// the COPY's outcome: rows loaded (affected_rows) or the error that stopped it.
  [[nodiscard]] pg_reply copy_in(std::string_view constant_sql, std::string_view data);

  /// Runs a constant script of several statements (simple query protocol). For schema
  /// migrations only: the script must contain no value that came from outside the program.
  [[nodiscard]] pg_reply exec_script(std::string_view constant_sql);

  /// Asks the server to cancel the statement in progress. Safe from any thread.
  /// Returns false if there was no connection or the request could not be sent.
  bool cancel();

  /// The server process id serving this connection; 0 when not connected.
  [[nodiscard]] int backend_pid() const noexcept;

  /// True while connected and not known to be broken.
  [[nodiscard]] bool connected() const noexcept;

  /// How many times a connection was established (1 after the first connect).
  [[nodiscard]] std::uint64_t connect_count() const noexcept { return connect_count_; }

  /// Server notices (warnings, "relation already exists, skipping", ...) since the last call.
  /// They are kept here instead of being printed on stderr; at most the last 32 are kept.
  [[nodiscard]] std::vector<std::string> take_notices();

private:
  [[nodiscard]] std::optional<std::string> connect_once();
  [[nodiscard]] pg_reply wrap(::pg_result* raw, bool ends_transaction);
  void drop_connection();
  void lose_connection(bool ends_transaction);
  [[nodiscard]] std::optional<pg_reply> refuse_statement(std::string_view sql);
  /// The reply that stops `sql` before it is sent (refused, or no connection), if any.
  [[nodiscard]] std::optional<pg_reply> before_statement(std::string_view sql);
  /// The prepared name of `text` ("" to send it unprepared), preparing it first; or the failure.
  [[nodiscard]] std::variant<std::string, pg_reply> prepared_name(const std::string& text,
                                                                  std::size_t param_count);
  /// A statement ready to send: its text, parameter values and prepared name ("" unprepared).
  struct ready_statement {
    std::string text;
    std::vector<const char*> values;
    std::string prepared;
    /// The session's plan_cache_mode must change before it runs (exec_switching_plans).
    bool switch_plans = false;
    [[nodiscard]] int count() const { return static_cast<int>(values.size()); }
  };
  /// What `exec` and `exec_pipeline` do before sending: refusal, connection, plan mode, prepare.
  /// `defer_switch`: a plan mode switch a prepared statement needs is left to the caller
  /// (`switch_plans`), to be sent with it.
  [[nodiscard]] std::variant<ready_statement, pg_reply> ready(std::string_view sql,
                                                              const pg_params& params,
                                                              bool generic_plan,
                                                              bool defer_switch = false);
  /// Runs prepared `s` (`sql` with `params`) after switching plan_cache_mode to
  /// `formats.generic_plan`, both in one pipeline; the mode is recorded when both succeeded.
  [[nodiscard]] pg_reply exec_switching_plans(std::string_view sql, const pg_params& params,
                                              const pg_formats& formats,
                                              const ready_statement& s);
  /// One try of exec_with.
  [[nodiscard]] pg_reply exec_once(std::string_view sql, const pg_params& params,
                                   const pg_formats& formats);
  [[nodiscard]] static std::vector<pg_reply> all_failing(std::size_t count, const pg_reply& like);
  /// exec_pipeline once every statement is ready: sends them all, then reads their replies.
  [[nodiscard]] std::vector<pg_reply> send_pipeline(const std::vector<pipelined>& statements,
                                                    const std::vector<ready_statement>& ready);
  /// Forgets the prepared form of `text` when `reply` failed because it is stale or gone.
  void forget_if_stale(const std::string& text, const pg_reply& reply);
  /// Whether `reply` is the failure of a stale or forgotten prepared statement.
  [[nodiscard]] static bool is_stale(const pg_reply& reply) noexcept;
  /// Switches the session's plan_cache_mode when it differs (outside transactions only).
  [[nodiscard]] std::optional<pg_reply> use_generic_plans(bool generic);
  static void on_notice(void* self, const char* message);

  std::string conninfo_;
  pg_reconnect_policy policy_;
  ::pg_conn* conn_ = nullptr;
  std::uint64_t connect_count_ = 0;
  /// When the session settled on a server that refuses writes (server_choice::writable_else_any).
  std::optional<std::chrono::steady_clock::time_point> settled_for_any_at_;
  /// A transaction was open when the connection was last healthy.
  bool in_transaction_ = false;
  /// The connection died inside a transaction that the caller has not ended yet.
  bool transaction_lost_ = false;
  std::vector<std::string> notices_;
  /// Statements prepared on the current connection, by SQL text; emptied when it is dropped.
  std::unordered_map<std::string, std::string> prepared_;
  std::uint64_t prepared_count_ = 0; ///< names are unique per connection: "comb_<n>"
  bool generic_plans_ = false; ///< the session's plan_cache_mode is force_generic_plan

  std::mutex cancel_mutex_; ///< guards cancel_, which another thread may use
  ::pg_cancel* cancel_ = nullptr;
};

} // namespace comb::storage
