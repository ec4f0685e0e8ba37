# lockwatch 的简体中文用语。与 en.ftl 的消息一一对应。
# 用词（全文统一，主管看得懂的话）：running 运行中 · stale 无响应 · down 已中断 · pending 等待启动 ·
# stopped 已停止 · conflict 冲突 · unknown 未知 · job 任务 · server 服务器 · standby 备用服务器 ·
# flag/enabled 启用（关闭为停用）· died 意外停止 · stuck 卡住 · failover 切换 · silent 已无响应 ·
# on it 我来处理/正在处理 · notification 通知 · mute 静音 · dashboard 监控面板 · settings 设置 ·
# sign in 登录 · start at login 登录时自动启动 · keyring 系统密码库 · heartbeat 最后响应 ·
# lock lease 锁的剩余时间 · fence token 运行序号
# 数字、英文与汉字之间空一格（“3 秒”“00:04 起”），时长后直接接汉字（“3 秒前”“3 秒内”）。

## 状态（句中用）

state-running = 运行中
state-stale = 无响应
state-down = 已中断
state-pending = 等待启动
state-stopped = 已停止
state-conflict = 冲突
state-unknown = 未知

## 时长

duration-ms = { $ms } 毫秒
duration-s = { $s } 秒
duration-min = { $min } 分 { $s } 秒
duration-h = { $h } 小时 { $min } 分
list-separator = { "、" }

## 托盘菜单

menu-connecting = { $job }：正在连接…
menu-head = { $job }：{ $state }
menu-head-server = { $job }：{ $state } · { $server }
menu-head-unreadable = { $job }：{ $state }（无法读取 Redis）
menu-head-sign-in = { $job }：{ $state }。请登录：设置 → 密码
menu-head-reason = { $job }：{ $state }（Redis 中的数据无法判断，详情见监控面板）
menu-pending = 应在 { $left }内由服务器启动
menu-since = { $since } 起
menu-heartbeat = { $age }前最后响应
menu-flip = 由我启用
menu-flip-unknown = 由我启用：未知（无法读取 Redis）
menu-others-not-yet = 启用人：暂时未知
menu-others-unreadable = 启用人：未知（无法读取 Redis）
menu-others-none = 没有其他人启用
menu-others = 其他启用人：{ $users }
menu-flags-lost = ⚠ Redis 丢失了 { $users } 的启用设置（原为启用）：在重新启用或停用之前，仍按启用处理
menu-on-it = { $user } 自 { $since } 起正在处理：{ $note }
menu-on-it-plain = { $user } 自 { $since } 起正在处理
menu-on-it-own = 您自 { $since } 起正在处理：{ $note }
menu-on-it-own-plain = 您自 { $since } 起正在处理
menu-ack = 我来处理
menu-unack = 我不再处理
menu-own-on = ✓ 您已于 { $time } 启用
menu-own-off = ✓ 您已于 { $time } 停用
menu-flip-refused = ⚠ 您的更改未保存，详情见监控面板
menu-open = 打开监控面板
menu-mute = 通知静音
menu-muted = 通知已静音至 { $until }
menu-mute-1h = 1 小时
menu-mute-4h = 4 小时
menu-mute-tomorrow = 直到明天
menu-unmute-left = 恢复通知（还剩 { $left }）
menu-settings = 设置…
menu-autostart = 登录时自动启动
menu-autostart-machine = 登录时自动启动（本机统一设置）
menu-quit = 退出 lockwatch
menu-settings-problem = 设置有问题：{ $error }
dialog-off-title = 停用 { $job }
dialog-off-native = 您是最后一个启用 { $job } 的人，要停用吗？停用后它将在所有服务器上停止。

## 通知

note-died = { $job } 意外停止
note-died-on = { $job } 在 { $server } 上意外停止
note-data-lost = Redis 丢失了 { $job } 的数据
note-conflict = { $job }：两台服务器同时在运行
note-failover = { $job } 已从 { $from } 切换到 { $to }
note-failover-alone = { $job } 已从 { $from } 切换到 { $to }，已没有其他服务器可以接管
note-failover-unnamed = { $job } 已切换到另一台服务器
note-restarted-on = { $job } 已在 { $server } 上重新启动
note-restarted = { $job } 已重新启动
note-stalled = { $job } 卡住了
note-stalled-hung = { $job } 在 { $server } 上卡住了
note-stalled-dying = { $job } 在 { $server } 上失去联系
note-recovered = { $job } 已恢复运行
note-started = { $job } 已开始运行
note-stopped = { $job } 已停止
note-unreachable = 无法连接 Redis：任务状态未知
note-reachable = Redis 已恢复连接
menu-no-standby = ⚠ 没有备用服务器：{ $server } 已无响应
note-standby-lost = { $job } 已没有备用服务器
note-standby-back = { $job } 重新有了备用服务器
note-body = { $kind ->
        [died] { $at }：{ $users } 已启用此任务，但没有服务器在运行。
        [data_lost] { $at }：Redis 丢失了此任务的数据，各人的启用设置、由哪台服务器运行以及历史记录可能都已丢失；等服务器重新运行此任务，或有人重新启用后，即恢复正常。
        [conflict] { $at }：两台服务器同时声称在运行此任务。
        [failover_unnamed] { $at }：现在由另一台服务器运行。
        [failover] { $at }：现在由 { $to } 运行。
        [restarted] { $at }：同一台服务器重新接管了任务。
        [stalled] { $at }：仍有服务器占着此任务，但它可能卡住了，或已失去联系。
        [stalled_hung] { $at }：{ $server } 已 { $duration } 没有报到，但仍占着任务：任务可能卡住了。
        [stalled_dying] { $at }：{ $server } 已失去联系（程序已退出或与 Redis 断开）；{ $duration }后由另一台服务器接管。
        [stalled_dying_never] { $at }：{ $server } 已失去联系，而它对任务的占用不会自动解除：如果该服务器已不在运行，需要工程师手动释放任务。
        [recovered] { $at }：已有服务器重新运行此任务。
        [started] { $at }：已有服务器开始运行此任务。
        [stopped] { $at }：所有人都已停用，任务已停止。
        [unreachable] { $at }：任务的实际状态未知，并不代表任务已停止。
        [reachable] { $at }：已重新连接到 Redis。
        [standby_lost] { $at }：{ $to } 已无响应；如果 { $from } 停止，将没有服务器接管此任务。
        [standby_back] { $at }：{ $to } 已恢复，可以接管此任务。
       *[other] { $at }：{ $reason }
    }
note-action-open = 打开监控面板
note-action-snooze = 静音 1 小时
note-action-on-it = 我来处理
note-flip-refused = 您对 { $job } 的启用设置未能更改
note-ack-refused = 您对 { $job } 的“我来处理”未能保存
note-settings-reset = lockwatch 设置已重置
note-site-settings = lockwatch：本机的默认设置有一部分未能使用
note-sign-in = lockwatch：请登录 Redis
note-sign-in-body = Redis 不接受您的用户名或密码，所以任务状态未知：请打开“设置”输入密码（密码向管理员索取）。
note-test = lockwatch 测试通知
note-test-body = lockwatch 的通知能送达这台电脑：任务意外停止或切换到另一台服务器时，会像这样通知您。

## Windows 缺少 WebView2 运行时（消息框，一句话）

webview-missing-title = lockwatch
webview-missing = 监控面板需要 Microsoft Edge WebView2 运行时，这台电脑上没有：请 IT 管理员安装（离线安装包“常青版独立安装程序”见 https://developer.microsoft.com/zh-cn/microsoft-edge/webview2/）；在此之前，托盘图标、菜单和通知照常工作。

## 被拒绝的写入，用主管的话说（Redis 的原话在监控面板中）

refusal-not-allowed = Redis 不允许 { $user } 修改此项。请让 Redis 管理员授予 `lockwatch acl --user { $user }` 输出的规则。
refusal-other-user = Redis 用户 { $login } 只能修改 { $login } 自己的设置，不能修改 { $user } 的：请在设置中把“您的名字”改为 { $login }，或以 { $user } 的身份登录 Redis。
refusal-login = Redis 不接受您的用户名或密码：请在设置中检查。
refusal-unreachable = 暂时无法连接 Redis：请等连接恢复后重试。
refusal-other = Redis 拒绝了此更改：详情见监控面板。
refusal-unregistered = 已保存，但暂不生效：{ $user } 尚未登记为此任务的用户。请让 Redis 管理员登记 { $user }。

## 测试连接

test-failed = 未能连接 { $host }：{ $why ->
        [unreachable] 该地址无响应；请检查主机、端口和 TLS（rediss://）。
        [login] 用户名或密码被拒绝。
        [not-allowed] { $user } 无权读取此任务；Redis 管理员可授予 `lockwatch acl --user { $user }` 输出的规则。
       *[other] Redis 拒绝了请求；把鼠标移到这里可查看 Redis 的原话。
    }
test-connected = 已连接 { $host } 并读取任务 { $job }：{ $users } 个已登记用户，{ $workers } 台服务器在线{ $silent ->
        [0] {""}
       *[other] ，{ $silent } 台已无响应
    }。

## 监控面板

page-nav-live = 实时
page-nav-history = 历史
page-nav-settings = 设置
page-notray = 此桌面没有系统托盘（没有 StatusNotifierWatcher，也没有 XEmbed 托盘），lockwatch 改为显示此窗口。在 GNOME 上安装 AppIndicator 扩展即可显示托盘图标。
page-dismiss = 关闭此提示
page-failed = 监控面板出错：{ $message }
page-connection = { $redis } · 用户 { $user }
page-connecting = 正在连接…

page-state-running = 运行中
page-state-stale = 无响应
page-state-down = 已中断
page-state-pending = 等待启动
page-state-stopped = 已停止
page-state-conflict = 冲突
page-state-unknown = 未知
page-hint-running = 有服务器在运行，响应正常
page-hint-stale = 有服务器占着此任务，但已不再响应：可能卡住或正在退出
page-hint-down = 已启用，但没有服务器在运行
page-hint-pending = 暂无服务器运行，稍后应有服务器启动它
page-hint-stopped = 没有人启用
page-hint-conflict = 两台服务器同时声称在运行
page-hint-unknown = 无法读取 Redis

page-reason-running = 正在 { $server } 上运行。
page-reason-stale = { $server } 占着此任务，但已有 { $age }没有响应：可能卡住或正在退出。
page-reason-stale-unnamed = 有服务器占着此任务，但最近都没有响应，无法确定是哪一台：可能卡住或正在退出。
page-reason-down = 已启用，但没有服务器在运行。
page-reason-pending = 暂无服务器运行，应在 { $until } 前由服务器启动。
page-reason-pending-open = 暂无服务器运行，稍后应有服务器启动它。
page-reason-stopped = 已停止：没有人启用。
page-reason-conflict = 两台服务器同时声称在运行此任务。
page-reason-unreadable = 无法读取 Redis，状态未知（并不代表已停止）。
page-reason-unknown = 无法从 Redis 中的数据判断状态：{ $reason }

page-server = 服务器
page-heartbeat = 最后响应
page-lease = 锁的剩余时间
page-fence = 运行序号
page-details = lockwatch 看到的情况
page-since = 开始于
page-checked = 检查时间
page-ago = { $duration }前
page-just-now = 刚刚
page-since-value = { $time }（{ $duration }）
page-lock-field = 未报名称的服务器
page-not-known = 未知
page-free = 空闲
page-no-expiry = 永不过期
page-on-it = 正在处理
page-on-it-line = { $user }，{ $since } 至 { $until }
page-on-it-note = { $user }，{ $since } 至 { $until }：{ $note }
page-who = 启用人
page-col-user = 用户
page-col-enabled = 已启用
page-jobs = 作业（有问题的排在前面）
page-col-state = 状态
page-col-job = 作业
page-col-meaning = 说明
page-col-since = 开始于
page-col-host = 来源主机
page-you = { $user }（您）
page-unreadable = 无法读取
page-yes = 是
page-no = 否
page-mine = 由我启用
page-mine-unknown = 由我启用：未知
page-off-last = 您是最后一个启用 { $job } 的人：停用后所有服务器上的任务都会停止。
page-off-reason = 原因（可选，所有人都能在历史中看到）
page-off-reason-hint = 例如：今晚盘点
page-off-confirm = 停用
page-off-cancel = 保持启用
page-not-changed = 未能更改：{ $error }

page-window-1h = 1 小时
page-window-24h = 24 小时
page-window-7d = 7 天
page-zoom = 时间范围
page-history-title = { $job }：最近 { $window }
page-strip-until = 截至 { $time } 的 { $window }
page-strip-label = 时间线：{ $runs }
page-strip-run = { $server }：{ $from } 至 { $to }
page-strip-nobody = 无人运行
page-legend-nobody = 斜线区域：无人运行
page-incidents = 切换、重启与意外停止
page-flips = 谁启用或停用了任务
page-col-when = 时间
page-col-what = 事件
page-col-from = 原服务器
page-col-to = 新服务器
page-col-why = 原因
page-col-down = 中断时长
page-col-who = 操作人
page-col-switched = 操作
page-none-recorded = 无记录。
page-what-failover = 切换
page-what-restart = 重启
page-what-death = 意外停止
page-switched-on = 启用
page-switched-off = 停用
page-still-down = { $duration }（仍中断）
page-cause-disabled = 无人启用此任务
page-cause-shutdown = 服务器上的 lockwatch 正在停止
page-cause-lost = 任务被另一台服务器、工程师或 Redis 收回
page-cause-expired = 未能及时连上 Redis 保住任务（无法连接 Redis，或服务器暂停）
page-cause-replica-unconfirmed = Redis 的备份副本未能及时确认
page-cause-released = 交还了任务
page-cause-silent = 服务器未留下任何记录就停止了（被终止、崩溃或与 Redis 断开）

page-settings = 设置
page-redis-url = Redis 地址
page-password = 密码
page-password-hint = 保存在系统密码库中；留空则保持不变
page-password-hint-memory = 本机没有系统密码库：只保存在内存中，直到 lockwatch 退出
page-password-hint-kept = 留空则保持已保存的密码
page-tls-ca = TLS CA 证书文件（PEM）
page-tls-ca-hint = 仅私有 CA 需要
page-sentinels = 哨兵（Sentinel）
page-sentinels-hint = 主机:端口, …（留空则只用地址中的那一个 Redis）
page-sentinel-master = 哨兵主节点名称
page-sentinel-master-hint = 即 sentinel monitor 中的 NAME
page-cluster = Redis 集群（地址可填任一节点）
page-user = 您的名字
page-user-default = 默认：{ $user }
page-user-hint = 留空时：使用地址中的用户名，否则为您的电脑登录名。若管理员为团队设置了统一地址，它也是您的 Redis 用户名。
page-jobs = 任务
page-poll = 轮询间隔
page-heartbeat-grace = 心跳宽限
page-failover-window = 切换时限
page-start-grace = 启动宽限
page-language = 语言
page-language-auto = 自动（跟随桌面）
page-notify = 任务出现以下情况时通知我：
page-event-died = 意外停止
page-event-data_lost = Redis 丢失数据
page-event-failover = 切换到另一台服务器
page-event-restarted = 重新启动
page-event-conflict = 两台服务器同时运行
page-event-stalled = 卡住
page-event-recovered = 恢复运行
page-event-started = 开始运行
page-event-stopped = 停止
page-event-unreachable = 无法连接 Redis
page-event-reachable = Redis 恢复连接
page-servers = 全部服务器
page-node-silent = { $server }（已无响应 { $duration }）
page-no-standby = ⚠ 没有备用服务器：{ $server } 已无响应；若当前服务器停止，将无服务器接管。
page-flags-lost = ⚠ Redis 丢失了 { $users } 的启用设置（丢失时为启用，并非有人停用）。在重新启用或停用之前，仍按启用处理。
page-event-standby_lost = 失去备用服务器
page-event-standby_back = 重新有了备用服务器
page-sound = 严重通知（意外停止、两台服务器同时运行、数据丢失）时播放提示音
page-advanced = 高级
page-save = 保存
page-test = 测试连接
page-testing = 正在测试…
page-notify-test = 发送测试通知
page-notify-test-no-tray = 未发送：负责通知的托盘程序没有运行。请启动 lockwatch 后再试。
page-notify-test-sent = 已发送：几秒内就会出现。如果没有出现，说明系统设置中关闭了 lockwatch 的通知（应用日志中记有系统的答复）。
page-overridden = 只要设置了 { $variable }，就以它为准。
page-saved = 已保存，正在按新设置监控。
page-password-in-memory = 这台电脑没有系统密码库：密码只保存在内存中，lockwatch 退出后，下次启动时需重新输入。
page-saved-note = 已保存。{ $note }
page-not-saved = 未保存：{ $error }
page-not-saved-fields = 未保存：请查看标出的字段。
