#!/bin/bash
# Renders the tray menu and a failover notification with its buttons (in
# Chinese also the dashboard) under Xvfb, for the README's pictures:
#   bash scripts/screenshots/desktop.sh en   docs/tray-menu.png, docs/notification-failover.png
#   bash scripts/screenshots/desktop.sh zh   docs/tray-menu-zh.png, docs/notification-failover-zh.png, docs/dashboard-zh.png
# Run inside dbus-run-session after building (cargo build -p lockwatch -p lockwatch-tray);
# needs xdotool, imagemagick, dunst, trayer, fonts-wqy-microhei. Look at each picture before committing it.
set -u
case "${1:-}" in
  en) LOCALE=en_US.UTF-8 SUFFIX= NOTE="looking at wh-east-1" D=:172 ;;
  zh) LOCALE=zh_CN.UTF-8 SUFFIX=-zh NOTE="正在查看 wh-east-1" D=:171 ;;
  *) echo "usage: bash scripts/screenshots/desktop.sh en|zh" >&2; exit 2 ;;
esac
W=$(cd "$(dirname "$0")/../.." && pwd); BIN=$W/target/debug; OUT=$(mktemp -d); T=$(mktemp -d)
P=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
Xvfb $D -screen 0 1280x800x24 -nolisten tcp & XPID=$!
sleep 1
export DISPLAY=$D HOME=$T/home XDG_RUNTIME_DIR=$T/run XDG_CONFIG_HOME=$T/home/.config XDG_DATA_HOME=$T/home/.local/share XDG_CACHE_HOME=$T/home/.cache
mkdir -p $HOME/.config/dunst $XDG_RUNTIME_DIR; chmod 700 $XDG_RUNTIME_DIR
cat > $HOME/.config/dunst/dunstrc <<RC
[global]
font = WenQuanYi Micro Hei 11
width = 440
origin = top-right
offset = 20x40
format = "<b>%s</b>\n%b"
show_indicators = yes
dmenu = "/usr/bin/python3 $W/scripts/screenshots/actions.py"
frame_width = 1
frame_color = "#8a8a8a"
[urgency_normal]
background = "#fafafa"
foreground = "#222222"
timeout = 0
RC
redis-server --port $P --bind 127.0.0.1 --save '' --appendonly no --dir $T >/dev/null & RPID=$!
sleep 0.5
U=redis://127.0.0.1:$P
$BIN/lockwatch --redis $U enable --user alice >/dev/null; $BIN/lockwatch --redis $U enable --user bob >/dev/null
$BIN/lockwatch --redis $U worker --node wh-east-1 --lease 3s --stop-grace 1s -- sh -c 'while :; do sleep 0.2; done' >/dev/null 2>&1 & A=$!
sleep 1
$BIN/lockwatch --redis $U worker --node wh-west-1 --lease 3s --stop-grace 1s -- sh -c 'while :; do sleep 0.2; done' >/dev/null 2>&1 & B=$!
dunst >/dev/null 2>&1 & DPID=$!
trayer --edge top --align right --widthtype request --height 28 --transparent false --tint 0xdddddd >/dev/null 2>&1 & TPID=$!
sleep 1
export LANG=$LOCALE LC_ALL= LOCKWATCH_REDIS_URL=$U LOCKWATCH_USER=alice
$BIN/lockwatch-tray > $T/app.log 2>&1 & APP=$!
sleep 6
$BIN/lockwatch --redis $U ack --user bob --note "$NOTE" >/dev/null
sleep 2
# the tray menu, without the start's notification over it: click trayer's icon
dunstctl close-all
sleep 0.5
xdotool mousemove 1266 14 click 1
sleep 1.5
import -window root $OUT/full-menu.png
xdotool key Escape; sleep 0.5
# a failover: kill -9 the holder (its reaper hands the lock over at once)
kill -9 $A
sleep 4
dunstctl context >/dev/null 2>&1 &
sleep 2
import -window root $OUT/full-note-actions.png
xdotool key Escape 2>/dev/null
if [ "$1" = zh ]; then
  # the dashboard: a second launch opens the running app's
  dunstctl close-all
  $BIN/lockwatch-tray >/dev/null 2>&1
  sleep 4
  import -window root $OUT/full-dash.png
fi
kill $APP $B $DPID $TPID $RPID 2>/dev/null; sleep 1; kill $XPID; rm -rf $T
# The menu hangs from the icon at the top right; the notification and the
# buttons' list stand below it: each crop is trimmed to what is drawn.
convert $OUT/full-menu.png -crop 560x360+720+0 +repage -bordercolor black -border 1 -trim +repage $W/docs/tray-menu$SUFFIX.png
convert $OUT/full-note-actions.png -crop 520x420+760+30 +repage -bordercolor black -border 1 -trim +repage $W/docs/notification-failover$SUFFIX.png
[ "$1" = zh ] && convert $OUT/full-dash.png -crop 960x680+0+0 +repage $W/docs/dashboard-zh.png
rm -rf $OUT
