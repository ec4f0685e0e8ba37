#!/bin/bash
# Renders the Chinese tray menu, a failover notification and the dashboard under Xvfb.
set -u
# Run inside dbus-run-session after building (cargo build -p lockwatch -p lockwatch-tray);
# needs xdotool, imagemagick, dunst, trayer, fonts-wqy-microhei. Writes the crops to docs/.
W=$(cd "$(dirname "$0")/../.." && pwd); BIN=$W/target/debug; OUT=$(mktemp -d); T=$(mktemp -d)
P=47391
Xvfb :171 -screen 0 1280x800x24 -nolisten tcp & XPID=$!
sleep 1
export DISPLAY=:171 HOME=$T/home XDG_RUNTIME_DIR=$T/run XDG_CONFIG_HOME=$T/home/.config XDG_DATA_HOME=$T/home/.local/share XDG_CACHE_HOME=$T/home/.cache
mkdir -p $HOME/.config/dunst $XDG_RUNTIME_DIR; chmod 700 $XDG_RUNTIME_DIR
cat > $HOME/.config/dunst/dunstrc <<RC
[global]
font = WenQuanYi Micro Hei 11
geometry = "420x6-20+40"
width = 420
origin = top-right
offset = 20x40
format = "<b>%s</b>\n%b\n[%a]"
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
export LANG=zh_CN.UTF-8 LC_ALL= LOCKWATCH_REDIS_URL=$U LOCKWATCH_USER=alice
$BIN/lockwatch-tray > $T/app.log 2>&1 & APP=$!
sleep 6
$BIN/lockwatch --redis $U ack --user bob --note "正在查看 wh-east-1" >/dev/null
sleep 2
# the tray menu: click trayer's icon
xdotool mousemove 1266 14 click 1
sleep 1.5
import -window root $OUT/full-menu.png
xdotool key Escape; sleep 0.5
# a failover: kill -9 the holder
kill -9 $A
sleep 8
import -window root $OUT/full-note.png
dunstctl context >/dev/null 2>&1 &
sleep 2
import -window root $OUT/full-note-actions.png
xdotool key Escape 2>/dev/null
# the dashboard: a second launch opens the running app's
$BIN/lockwatch-tray >/dev/null 2>&1
sleep 4
import -window root $OUT/full-dash.png
kill $APP $B $DPID $TPID $RPID 2>/dev/null; sleep 1; kill $XPID; rm -rf $T
convert $OUT/full-menu.png -crop 490x292+790+0 +repage $W/docs/tray-menu-zh.png
convert $OUT/full-note-actions.png -crop 470x375+810+36 +repage $W/docs/notification-failover-zh.png
convert $OUT/full-dash.png -crop 960x680+0+0 +repage $W/docs/dashboard-zh.png
rm -rf $OUT
