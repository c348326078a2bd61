/* main.c — godis-worker (placeholder until the process wiring lands). */
#include <stdio.h>
int main(void)
{
    fputs("godis-worker: not wired yet\n", stderr);
    return 1;
}
