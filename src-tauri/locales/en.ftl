# lockwatch's words in English. The same ids live in zh-CN.ftl; a test
# checks that both files have every message and that each one formats.
# Messages the page uses (page-*, state-*, duration-*) take plain
# variables only, no selectors: the page fills them in itself.

## The states, as words inside a sentence (tray, notifications)

state-running = running
state-stale = not responding
state-down = down
state-pending = pending
state-stopped = stopped
state-conflict = conflict
state-unknown = unknown

## Durations

duration-ms = { $ms } ms
duration-s = { $s } s
duration-min = { $min } min { $s } s
duration-h = { $h } h { $min } min
list-separator = { ", " }

## The tray menu

menu-connecting = { $job }: connecting…
menu-head = { $job }: { $state }
menu-head-server = { $job }: { $state } on { $server }
menu-head-unreadable = { $job }: { $state } (Redis unreadable)
menu-head-sign-in = { $job }: { $state }. Sign in: Settings → Password
menu-head-reason = { $job }: { $state } ({ $reason })
menu-pending = a server should take it within { $left }
menu-since = since { $since }
menu-heartbeat = last heard from { $age } ago
menu-flip = Enabled for me
menu-flip-unknown = Enabled for me: not known (Redis unreadable)
menu-others-not-yet = Who has it enabled: not known yet
menu-others-unreadable = Who has it enabled: not known (Redis unreadable)
menu-others-none = Nobody else has it enabled
menu-others = Also enabled by: { $users }
menu-flags-lost = ⚠ Redis lost { $users }'s switch (it was on): it still counts as on until it is switched on or off again
menu-on-it = { $user } has been on it since { $since }: { $note }
menu-on-it-plain = { $user } has been on it since { $since }
menu-on-it-own = You have been on it since { $since }: { $note }
menu-on-it-own-plain = You have been on it since { $since }
menu-ack = I'm on it
menu-unack = I'm no longer on it
menu-own-on = ✓ You switched it on at { $time }
menu-own-off = ✓ You switched it off at { $time }
menu-flip-refused = ⚠ Your change was not saved: details in the dashboard
menu-open = Open dashboard
menu-mute = Mute notifications
menu-muted = Notifications muted until { $until }
menu-mute-1h = For 1 hour
menu-mute-4h = For 4 hours
menu-mute-tomorrow = Until tomorrow
menu-unmute-left = Unmute ({ $left } left)
menu-settings = Settings…
menu-autostart = Start at login
menu-autostart-machine = Start at login (set for this computer)
menu-quit = Quit lockwatch
menu-settings-problem = Settings problem: { $error }
dialog-off-title = Switch { $job } off
dialog-off-native = You are the last one with { $job } on: switch it off? It stops on every server.

## Notifications

note-died = { $job } died
note-died-on = { $job } died on { $server }
note-data-lost = Redis lost the data of { $job }
note-conflict = { $job }: two servers run it
note-failover = { $job } moved from { $from } to { $to }
note-failover-alone = { $job } moved from { $from } to { $to }; no other server is left to take it over
note-failover-unnamed = { $job } moved to another server
note-restarted-on = { $job } restarted on { $server }
note-restarted = { $job } restarted
note-stalled = { $job } is stuck
note-stalled-hung = { $job } is stuck on { $server }
note-stalled-dying = { $job } is dying on { $server }
note-recovered = { $job } runs again
note-started = { $job } started
note-stopped = { $job } stopped
note-unreachable = Redis unreachable: job states unknown
note-reachable = Redis reachable again
menu-no-standby = ⚠ No backup server: { $server } is silent
note-standby-lost = { $job } has no backup server left
note-standby-back = { $job } has a backup server again
# What the title does not say yet; else the library's own sentence.
note-body = { $kind ->
        [died] { $at }: { $users } switched the job on, but no server runs it.
        [data_lost] { $at }: Redis lost the job's data: who switched it on, which server runs it and its history may all be gone. It is back to normal once a server runs the job again or someone switches it on again.
        [conflict] { $at }: two servers both say they run the job.
        [failover_unnamed] { $at }: another server runs it now.
        [failover] { $at }: { $to } runs it now.
        [restarted] { $at }: the same server took the job again.
        [stalled] { $at }: a server still has the job, but it may be stuck or cut off.
        [stalled_hung] { $at }: { $server } has not checked in for { $duration }, yet it still has the job: the job may be stuck.
        [stalled_dying] { $at }: { $server } stopped answering (its program ended or lost its link); another server takes over in { $duration }.
        [stalled_dying_never] { $at }: { $server } stopped answering, and its hold on the job will not end by itself: if that server is gone, an engineer must free the job by hand.
        [recovered] { $at }: a server runs the job again.
        [started] { $at }: a server started the job.
        [stopped] { $at }: everyone switched it off; the job stopped.
        [unreachable] { $at }: the job's real state is unknown; that does not mean it stopped.
        [reachable] { $at }: Redis can be reached again.
        [standby_lost] { $at }: the backup server { $to } is silent; if { $from } stops, no server takes the job over.
        [standby_back] { $at }: { $to } is back and can take the job over.
       *[other] { $at }: { $reason }
    }
note-action-open = Open dashboard
note-action-snooze = Mute 1 h
note-action-on-it = I'm on it
note-flip-refused = Your switch for { $job } was not changed
note-ack-refused = Your "on it" for { $job } was not saved
note-settings-reset = lockwatch settings reset
note-site-settings = lockwatch: this computer's defaults were not all used
note-sign-in = lockwatch: sign in to Redis
note-sign-in-body = Redis did not accept your user name or password, so the job's state is unknown: open Settings and enter your password (your admin has it).
note-test = lockwatch test notification
note-test-body = Notifications from lockwatch reach this desk: a job that dies or moves to another server is told like this.

## Windows without the WebView2 runtime (a message box, one sentence)

webview-missing-title = lockwatch
webview-missing = The dashboard needs the Microsoft Edge WebView2 Runtime, which this computer does not have: ask your IT admin to install it (the offline "Evergreen Standalone Installer" is at https://developer.microsoft.com/microsoft-edge/webview2/); the tray icon, its menu and notifications keep working meanwhile.

## A refused write, in a supervisor's words (the dashboard keeps Redis's own)

refusal-not-allowed = Redis does not let { $user } change this. Ask the Redis admin to grant the rules `lockwatch acl --user { $user }` prints.
refusal-other-user = Redis user { $login } may change only { $login }'s keys, not { $user }'s: set Your name to { $login } in Settings, or sign in to Redis as { $user }.
refusal-login = Redis did not accept your user name or password: check them in Settings.
refusal-unreachable = Redis cannot be reached right now: try again when it is back.
refusal-other = Redis refused the change: the dashboard has the details.
refusal-unregistered = Saved, but it does not count yet: { $user } is not registered for this job. Ask the Redis admin to register { $user }.

## Test connection (answered by the app in one sentence)

test-failed = Not connected to { $host }: { $why ->
        [unreachable] nothing answers there; check the host, the port and TLS (rediss://).
        [login] the user name or password was refused.
        [not-allowed] { $user } may not read the job; the Redis admin can grant the rules `lockwatch acl --user { $user }` prints.
       *[other] Redis refused; its own words are under the pointer.
    }
test-connected = Connected to { $host } and read job { $job }: { $users ->
        [one] one registered user
       *[other] { $users } registered users
    }, { $workers ->
        [one] one worker alive
       *[other] { $workers } workers alive
    }{ $silent ->
        [0] {""}
       *[other] , { $silent } silent
    }.

## The dashboard page

page-nav-live = Live
page-nav-history = History
page-nav-settings = Settings
page-notray = No tray on this desktop (no StatusNotifierWatcher, no XEmbed system tray): lockwatch shows this window instead. On GNOME, install the AppIndicator extension to get the tray icon.
page-dismiss = Dismiss this hint
page-failed = The dashboard failed: { $message }
page-connection = { $redis } · as { $user }
page-connecting = Connecting…

page-state-running = Running
page-state-stale = Not responding
page-state-down = Down
page-state-pending = Pending
page-state-stopped = Stopped
page-state-conflict = Conflict
page-state-unknown = Unknown
page-hint-running = a server runs it and answers on time
page-hint-stale = a server has it but stopped answering: it may be stuck or shutting down
page-hint-down = enabled, but no server runs it
page-hint-pending = nobody runs it yet; a server should take it soon
page-hint-stopped = nobody has it enabled
page-hint-conflict = two servers claim it
page-hint-unknown = Redis cannot be read

# The library's sentence is English already and says the most.
page-reason-running = Running on { $server }.
page-reason-stale = { $server } has the job, but has not checked in for { $age }: it may be stuck or shutting down.
page-reason-stale-unnamed = A server has the job, but none has answered lately, so it is not known which one: it may be stuck or shutting down.
page-reason-down = Switched on, but no server runs it.
page-reason-pending = No server runs it yet; one should start it by { $until }.
page-reason-pending-open = No server runs it yet; one should start it shortly.
page-reason-stopped = Stopped: nobody has it switched on.
page-reason-conflict = Two servers both say they run the job.
page-reason-unreadable = Redis cannot be read, so the state is unknown (that does not mean it stopped).
page-reason-unknown = What Redis holds does not tell the state: { $reason }

page-server = Server
page-heartbeat = Last heard from
page-lease = Lock lease left
page-fence = Fence token
page-details = What lockwatch sees
page-since = Since
page-checked = Checked
page-ago = { $duration } ago
page-just-now = just now
page-since-value = { $time } ({ $duration })
page-lock-field = a server that gave no name
page-not-known = not known
page-free = free
page-no-expiry = no expiry
page-on-it = On it
page-on-it-line = { $user } since { $since }, until { $until }
page-on-it-note = { $user } since { $since }, until { $until }: { $note }
page-who = Who has it enabled
page-col-user = User
page-col-enabled = Enabled
page-jobs = Jobs (those in trouble first)
page-col-state = State
page-col-job = Job
page-col-meaning = What it means
page-col-since = Since
page-col-host = From host
page-you = { $user } (you)
page-unreadable = unreadable
page-yes = yes
page-no = no
page-mine = Enabled for me
page-mine-unknown = Enabled for me: not known
page-off-last = You are the last one with { $job } on: switching it off stops it on every server.
page-off-reason = Why (optional, everyone sees it in the history)
page-off-reason-hint = e.g. stock count tonight
page-off-confirm = Switch off
page-off-cancel = Keep it on
page-not-changed = Not changed: { $error }

page-window-1h = 1 h
page-window-24h = 24 h
page-window-7d = 7 d
page-zoom = Time span
page-history-title = { $job }: the last { $window }
page-strip-until = { $window } until { $time }
page-strip-label = Timeline: { $runs }
page-strip-run = { $server } from { $from } to { $to }
page-strip-nobody = nobody ran it
page-legend-nobody = hatched: nobody ran it
page-incidents = Failovers, restarts and deaths
page-flips = Who switched it on and off
page-col-when = When
page-col-what = What
page-col-from = From
page-col-to = To
page-col-why = Why
page-col-down = Down for
page-col-who = Who
page-col-switched = Switched
page-none-recorded = None recorded.
page-what-failover = failover
page-what-restart = restart
page-what-death = died
page-switched-on = on
page-switched-off = off
page-still-down = { $duration } (still down)
page-cause-disabled = nobody has the job enabled
page-cause-shutdown = worker stopping
page-cause-lost = another server, an engineer or Redis took the job from it
page-cause-expired = it could not reach Redis in time to keep the job (Redis unreachable, or the server paused)
page-cause-replica-unconfirmed = Redis's backup copy did not confirm in time that it had the job
page-cause-released = handed the job back
page-cause-silent = the server stopped without a word (killed, crashed or cut off from Redis)

page-settings = Settings
page-redis-url = Redis URL
page-password = Password
page-password-hint = kept in the OS keyring; leave empty to keep
page-password-hint-memory = no keyring here: kept in memory until lockwatch quits
page-password-hint-kept = leave empty to keep the saved one
page-tls-ca = TLS CA file (PEM)
page-tls-ca-hint = only for a private CA
page-sentinels = Sentinels
page-sentinels-hint = HOST:PORT, … (empty: one Redis at the URL)
page-sentinel-master = Sentinel primary name
page-sentinel-master-hint = as in sentinel monitor NAME
page-cluster = Redis Cluster (the URL names any node)
page-user = Your name
page-user-default = default: { $user }
page-user-hint = Left empty: the URL's user, else your login name. Where your admin set one URL for the team, it is also your Redis user.
page-jobs = Jobs
page-poll = Poll interval
page-heartbeat-grace = Heartbeat grace
page-failover-window = Failover window
page-start-grace = Start grace
page-language = Language
page-language-auto = Automatic (from the desktop)
page-notify = Notify me when the job…
page-event-died = died
page-event-data_lost = lost its data in Redis
page-event-failover = moved to another server
page-event-restarted = restarted
page-event-conflict = ran on two servers
page-event-stalled = got stuck
page-event-recovered = runs again
page-event-started = started
page-event-stopped = stopped
page-event-unreachable = Redis unreachable
page-event-reachable = Redis reachable again
page-servers = Servers
page-node-silent = { $server } (silent { $duration })
page-no-standby = ⚠ No backup server: { $server } is silent; nothing takes the job over if it stops here.
page-flags-lost = ⚠ Redis lost { $users }'s switch while it was on (nobody switched it off). It still counts as on until it is switched on or off again.
page-event-standby_lost = lost its backup server
page-event-standby_back = has a backup server again
page-sound = Play a sound with critical notifications (died, two servers, data lost)
page-advanced = Advanced
page-save = Save
page-test = Test connection
page-testing = Testing…
page-notify-test = Send a test notification
page-notify-test-no-tray = Not sent: the tray app, which notifies, is not running. Start lockwatch and try again.
page-notify-test-sent = Sent: it shows in a few seconds. If it does not, notifications are off for lockwatch in the system's settings (the app's log says what the system answered).
page-overridden = Overridden by { $variable } while it is set.
page-saved = Saved; watching with the new settings.
page-password-in-memory = This desktop has no keyring: the password is kept in memory until lockwatch quits, and asked again at its next start.
page-saved-note = Saved. { $note }
page-not-saved = Not saved: { $error }
page-not-saved-fields = Not saved: see the marked fields.
