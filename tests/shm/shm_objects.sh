# Sourced by the amrun test scripts (amrun_check.sh, amrun_launcher_death.sh): the am-*
# objects in /dev/shm.

# The am-* names in /dev/shm, sorted.
am_shm_list() { ls /dev/shm 2>/dev/null | grep '^am-' | sort; }

# Prints the am-* objects not named in file $1 (an earlier am_shm_list) that remain after up to
# 3 s; nothing when none does. Objects of jobs other tests run concurrently disappear as soon
# as their ranks attach, hence the wait.
am_shm_leftover() {
    _tries=0
    while :; do
        _left=$(am_shm_list | comm -13 "$1" -)
        if [ -z "$_left" ] || [ $_tries -ge 30 ]; then
            echo $_left
            return
        fi
        _tries=$((_tries + 1))
        sleep 0.1
    done
}
